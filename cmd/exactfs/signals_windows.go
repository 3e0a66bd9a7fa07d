package main

import "os"

var relayedSignals = []os.Signal{os.Interrupt}

func signalNumber(os.Signal) int { return 2 }

// forward kills the command: Windows cannot deliver an interrupt to another
// process group.
func forward(p *os.Process, _ os.Signal) { p.Kill() }

func deliveredByTerminal(os.Signal) bool { return false }

func signaledWith(*os.ProcessState) (int, bool) { return 0, false }
