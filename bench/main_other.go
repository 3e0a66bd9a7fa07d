//go:build !unix

package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "bench: the peer benchmark needs flock(2) and fsync of directories: unix only")
	os.Exit(1)
}
