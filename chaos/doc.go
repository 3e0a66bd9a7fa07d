// Package chaos holds the soak and linearizability tests of exactfs's state
// lock: processes SIGKILLed at any instant, Go and TypeScript peers on one
// state file, each history checked with porcupine. It is its own module so
// that the core module keeps a single dependency (golang.org/x/sys); it has
// no code of its own besides its tests.
//
// Run it with: cd chaos && go test -race -count=1 ./...
package chaos
