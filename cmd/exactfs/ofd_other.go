//go:build !linux

package main

import "os"

// ofdHeld is unknown without open-file-description locks.
func ofdHeld(*os.File) (held, known bool) { return false, false }
