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

	"github.com/exactfs/exactfs/statelock"
)

// Say "no change" with ErrNoChange: Update writes nothing and returns nil.
// A function that returns no bytes is refused (unless WithAllowEmpty), and
// so is a state file whose directory is missing (unless WithMakeDir).
func ExampleUpdate_noChange() {
	dir, opts := exampleDir()
	defer os.RemoveAll(dir)
	stateFile := filepath.Join(dir, "config.json")

	// Set "owner" once; later calls find it set and change nothing.
	setOwner := func(old []byte) ([]byte, error) {
		cfg := map[string]string{}
		if len(old) > 0 {
			if err := json.Unmarshal(old, &cfg); err != nil {
				return nil, err
			}
		}
		if cfg["owner"] != "" {
			return nil, statelock.ErrNoChange // nothing is written
		}
		cfg["owner"] = "alice"
		return json.Marshal(cfg)
	}
	for range 2 {
		if err := statelock.Update(context.Background(), stateFile, setOwner, opts...); err != nil {
			log.Fatal(err)
		}
	}
	data, _ := os.ReadFile(stateFile)
	fmt.Printf("%s\n", data)

	// A forgotten return value would wipe the state: refused.
	err := statelock.Update(context.Background(), stateFile, func([]byte) ([]byte, error) { return nil, nil }, opts...)
	fmt.Println(errors.Is(err, statelock.ErrEmptyResult))

	// A typo in the directory: refused, nothing created.
	err = statelock.Update(context.Background(), filepath.Join(dir, "tpyo", "config.json"), setOwner, opts...)
	fmt.Println(errors.Is(err, statelock.ErrNoDirectory))
	// Output:
	// {"owner":"alice"}
	// true
	// true
}
