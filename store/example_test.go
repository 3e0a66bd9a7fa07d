//go:build unix

package store_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/store"
)

// A store fenced by a lease: every mutation proves the lease is still held
// right before it commits, and compare-and-swap refuses a lost update.
func Example() {
	tmp, _ := os.MkdirTemp("", "store-example")
	defer os.RemoveAll(tmp)

	s, err := store.Open(filepath.Join(tmp, "state"), store.Create())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	lease, err := s.AcquireFence(context.Background(), "migrate")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("fence token:", lease.Fence())

	if _, err := s.Publish("state.json", []byte(`{"v":1}`)); err != nil {
		fmt.Println(err)
		return
	}
	old, id, _ := s.ReadExpected("state.json")
	if _, err := s.ReplaceExpected("state.json", []byte(`{"v":2}`), id); err != nil {
		fmt.Println(err)
		return
	}
	// A second writer still holding the first identity loses, visibly.
	_, err = s.ReplaceExpected("state.json", []byte(`{"v":"stale"}`), id)
	fmt.Println(string(old), "then stale write refused:", errors.Is(err, exactfs.ErrIdentityMismatch))

	lease.Release()
	_, err = s.Publish("other.json", nil)
	fmt.Println("after release:", errors.Is(err, store.ErrLeaseLost))
	// Output:
	// fence token: 1
	// {"v":1} then stale write refused: true
	// after release: true
}
