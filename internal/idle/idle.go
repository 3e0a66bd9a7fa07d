// Package idle is the old home of the no-writer probes, which are now
// proofs of the module root (exactfs.ProbeUnopened, ProbeNoWriter,
// ProbeWriter and Answer, in openers.go). It forwards to them, unchanged,
// until its last caller (statelock) calls the root directly; then it goes.
package idle

import (
	"os"

	"github.com/exactfs/exactfs"
)

// Answer is exactfs.Answer.
type Answer = exactfs.Answer

// The answers, as exactfs names them.
const (
	Unknown = exactfs.AnswerUnknown
	No      = exactfs.AnswerNo
	Yes     = exactfs.AnswerYes
)

// Unopened is exactfs.ProbeUnopened.
func Unopened(f *os.File) (why string, err error) { return exactfs.ProbeUnopened(f) }

// NoWriter is exactfs.ProbeNoWriter.
func NoWriter(f *os.File) (why string, err error) { return exactfs.ProbeNoWriter(f) }

// Writer is exactfs.ProbeWriter.
func Writer(f *os.File) (Answer, string) { return exactfs.ProbeWriter(f) }
