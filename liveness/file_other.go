//go:build !unix && !windows

package liveness

import (
	"io/fs"
	"os"
)

func checkConfigRootMode(string, fs.FileMode) error { return nil }

func tightenSecretMode(*os.File, fs.FileInfo) error { return nil }
