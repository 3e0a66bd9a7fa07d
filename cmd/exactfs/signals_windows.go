package main

import "os"

var relayedSignals = []os.Signal{os.Interrupt}

func signalNumber(os.Signal) int { return 2 }

func signaledWith(*os.ProcessState) (int, bool) { return 0, false }
