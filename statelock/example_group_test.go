//go:build unix

package statelock_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sync"

	"github.com/exactfs/exactfs/statelock"
)

// Goroutines of one process updating one state file at once share lock
// cycles (group commit): one read and one durable write serve every
// Update that queued meanwhile, each function given the previous output.
// Each Update still returns only once its own output is durable, with its
// own error. WithGroupCommit(false) gives each Update a cycle of its own.
func ExampleWithGroupCommit() {
	dir, opts := exampleDir()
	defer os.RemoveAll(dir)
	stateFile := filepath.Join(dir, "counter.json")

	inc := func(old []byte) ([]byte, error) {
		var st struct{ N int }
		if len(old) > 0 {
			if err := json.Unmarshal(old, &st); err != nil {
				return nil, err
			}
		}
		st.N++
		return json.Marshal(st)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if err := statelock.Update(context.Background(), stateFile, inc, opts...); err != nil {
				log.Fatal(err)
			}
		})
	}
	wg.Wait()
	// The same without sharing: every Update takes the lock on its own.
	solo := append(opts, statelock.WithGroupCommit(false))
	if err := statelock.Update(context.Background(), stateFile, inc, solo...); err != nil {
		log.Fatal(err)
	}
	data, _ := os.ReadFile(stateFile)
	fmt.Printf("%s\n", data)
	// Output:
	// {"N":9}
}
