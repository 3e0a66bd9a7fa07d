//go:build unix

package statelock_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/exactfs/exactfs/statelock"
)

// exampleDir makes a private directory for an example, with its own config
// root so that running the examples creates no installation secret in the
// user's config directory. Real callers leave the config root alone (every
// process sharing a lock must use the same one).
func exampleDir() (dir string, opts []statelock.Option) {
	dir, err := os.MkdirTemp("", "statelock-example-")
	if err != nil {
		log.Fatal(err)
	}
	return dir, []statelock.Option{statelock.WithConfigRoot(filepath.Join(dir, "config"))}
}

// A counter that any number of processes can increment without losing an
// update: lock, read, transform, durable replace, release.
func ExampleUpdate() {
	dir, opts := exampleDir()
	defer os.RemoveAll(dir)
	stateFile := filepath.Join(dir, "counter.json")

	inc := func(old []byte) ([]byte, error) {
		var st struct{ N int }
		if len(old) > 0 { // nil: the file does not exist yet
			if err := json.Unmarshal(old, &st); err != nil {
				return nil, err // the file is left untouched
			}
		}
		st.N++
		return json.Marshal(st)
	}
	for range 3 {
		if err := statelock.Update(context.Background(), stateFile, inc, opts...); err != nil {
			log.Fatal(err)
		}
	}
	data, _ := os.ReadFile(stateFile)
	fmt.Printf("%s\n", data)
	// Output:
	// {"N":3}
}

// Hold the lock around work of your own, and learn who holds it when it is
// busy.
func ExampleLock() {
	dir, opts := exampleDir()
	defer os.RemoveAll(dir)
	stateFile := filepath.Join(dir, "state.json")

	held, err := statelock.Lock(context.Background(), stateFile, append(opts, statelock.WithWait(30*time.Second))...)
	if err != nil {
		log.Fatal(err)
	}
	// ... read and write stateFile ...

	// Meanwhile, another caller finds it busy.
	_, err = statelock.TryLock(stateFile, opts...)
	var w *statelock.WaitError // who holds it, and what the call tried
	fmt.Println("busy:", errors.Is(err, statelock.ErrLocked), errors.As(err, &w) && w.Holder != "")

	if err := held.Unlock(); err != nil {
		log.Fatal(err) // someone else touched our lock record: loud, never silent
	}
	// Output:
	// busy: true true
}

// Without WithWait, a context deadline is the whole wait budget, however
// far away it is; WithWait(statelock.WaitForever) waits until the lock is
// free or the context is done.
func ExampleLock_deadline() {
	dir, opts := exampleDir()
	defer os.RemoveAll(dir)
	stateFile := filepath.Join(dir, "state.json")

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	held, err := statelock.Lock(ctx, stateFile, opts...) // waits up to 10 minutes, not DefaultWait
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(held.LockPath() == stateFile+".lock")
	held.Unlock()
	// Output:
	// true
}

// Run a function while holding the lock; the release is never forgotten.
func ExampleWith() {
	dir, opts := exampleDir()
	defer os.RemoveAll(dir)
	stateFile := filepath.Join(dir, "state.json")

	err := statelock.With(context.Background(), stateFile, func() error {
		fmt.Println("holding the lock")
		return nil
	}, opts...)
	fmt.Println(err)
	// Output:
	// holding the lock
	// <nil>
}

// Describe a lock without touching it: who holds it, and whether they are
// alive.
func ExampleInspect() {
	dir, opts := exampleDir()
	defer os.RemoveAll(dir)
	stateFile := filepath.Join(dir, "state.json")

	st, _ := statelock.Inspect(stateFile, opts...)
	fmt.Println(st.State)
	held, _ := statelock.Lock(context.Background(), stateFile, opts...)
	st, _ = statelock.Inspect(stateFile, opts...)
	fmt.Println(st.State, st.Holder.Pid == int64(os.Getpid()), st.Holder.Verdict)
	held.Unlock()
	st, _ = statelock.Inspect(stateFile, opts...)
	fmt.Println(st.State)
	// Output:
	// free
	// held true alive
	// released
}

// Recover what automatic reclaim never guesses about: here a transition
// claim directory a minute old with no sidecar in it (a taker killed between
// making the claim and writing its sidecar, so nothing names who made it).
// A dry run says what would be done and why; the real run does exactly
// that. The same on every platform: it needs no answer from the kernel.
// (An empty F.lock, which Recover removes where the kernel proves that no
// process holds a lock on it and keeps, saying why, where it cannot, is
// TestRecoverEmptyLock.)
func ExampleRecover() {
	dir, opts := exampleDir()
	defer os.RemoveAll(dir)
	stateFile := filepath.Join(dir, "state.json")
	claim := stateFile + ".lock.transition"
	os.Mkdir(claim, 0o700)
	old := time.Now().Add(-time.Minute)
	os.Chtimes(claim, old, old)

	plan, err := statelock.Recover(stateFile, true, opts...)
	if err != nil {
		log.Fatal(err)
	}
	for _, a := range plan {
		fmt.Println("would:", a.Kind, filepath.Base(a.Path))
	}
	done, err := statelock.Recover(stateFile, false, opts...)
	if err != nil {
		log.Fatal(err)
	}
	for _, a := range done {
		fmt.Println("done:", a.Kind, a.Done)
	}
	_, err = os.Lstat(claim)
	fmt.Println("gone:", os.IsNotExist(err))
	// Output:
	// would: remove-claim state.json.lock.transition
	// done: remove-claim true
	// gone: true
}
