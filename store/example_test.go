//go:build unix

package store_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/store"
)

// Owner-only storage bound to one directory: create once, read with the
// identity, replace only the version that was read.
func ExampleOpen() {
	base, _ := os.MkdirTemp("", "store-example-")
	defer os.RemoveAll(base)

	s, err := store.Open(filepath.Join(base, "secrets"), store.Create()) // 0700, no ACLs, bound to its inode
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Publish("token", []byte("secret")); err != nil { // 0600, never replaces
		log.Fatal(err)
	}
	data, id, err := s.ReadExpected("token")
	if err != nil {
		log.Fatal(err)
	}
	if _, err := s.ReplaceExpected("token", append(data, '!'), id); err != nil {
		log.Fatal(err)
	}
	// A writer still holding the old identity loses, and changes nothing.
	_, err = s.ReplaceExpected("token", []byte("other"), id)
	fmt.Println("stale writer refused:", errors.Is(err, exactfs.ErrIdentityMismatch))
	data, _, _ = s.ReadExpected("token")
	fmt.Printf("%s\n", data)
	// Output:
	// stale writer refused: true
	// secret!
}

// A lease with a fencing token that strictly increases from holder to
// holder, for a resource that must refuse a superseded writer.
func ExampleAcquireLease() {
	base, _ := os.MkdirTemp("", "store-example-")
	defer os.RemoveAll(base)
	locks := filepath.Join(base, "locks")

	first, err := store.AcquireLease(context.Background(), locks, "migration", store.CreateLocksDir())
	if err != nil {
		log.Fatal(err)
	}
	if err := first.AssertOwned(); err != nil {
		log.Fatal(err) // the lease was lost: stop writing
	}
	f1 := first.Fence()
	first.Release()

	second, err := store.AcquireLease(context.Background(), locks, "migration")
	if err != nil {
		log.Fatal(err)
	}
	defer second.Release()
	fmt.Println("later holder, larger fence:", second.Fence() > f1)
	// Output:
	// later holder, larger fence: true
}

// Reap crash residue: only files with a private residue name that are
// provably inert are removed; everything else is kept and reported.
func ExampleStore_Reap() {
	base, _ := os.MkdirTemp("", "store-example-")
	defer os.RemoveAll(base)
	s, err := store.Open(filepath.Join(base, "data"), store.Create())
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	// The empty placeholder an interrupted exact unlink leaves behind, and a
	// file of the user's own that merely sits beside it.
	os.WriteFile(filepath.Join(s.Path(), exactfs.PlaceholderPrefix+"803-1f2e"), nil, 0o600)
	os.WriteFile(filepath.Join(s.Path(), "notes.txt"), []byte("mine"), 0o600)

	rep, err := s.Reap(store.ReapMinAge(0))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("removed:", rep.Removed)
	names, _ := s.List(".")
	fmt.Println("left:", names)
	// Output:
	// removed: [.gjc-exact-unlink-placeholder-803-1f2e]
	// left: [notes.txt]
}
