//go:build unix && !linux

package main

import (
	"fmt"
	"os"
	"runtime"
)

func filesystem(name, dir string) (string, func(), error) {
	if name != "dir" {
		return "", nil, fmt.Errorf("mounting a fresh %s is implemented on Linux only", name)
	}
	base, err := os.MkdirTemp(dir, "exactfs-bench-")
	if err != nil {
		return "", nil, err
	}
	return base, func() { os.RemoveAll(base) }, nil
}

func describeFS(path string) string { return path + " (" + runtime.GOOS + ")" }
