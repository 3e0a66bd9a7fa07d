//go:build !unix

package main

import "os"

func fromTerminal(os.Signal) bool { return false }
