package statelock

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/exactfs/exactfs"
)

// ErrNoChange, returned by Update's function (alone or wrapped), says
// "leave the state file as it is": Update writes nothing and returns nil.
// Before it does, it makes the directory durable (one fsync), so that the
// bytes the function looked at, possibly renamed by a holder that
// released before its own fsync, are the state a power cut keeps: a
// caller told "nothing to change" is never told so about bytes a crash
// can take back.
var ErrNoChange = errors.New("statelock: no change, nothing written")

// ErrEmptyResult is in the error of an Update whose function returned no
// bytes (nil or empty) without WithAllowEmpty(true): the state file is
// left untouched. An empty result is nearly always a bug (an encoder that
// wrote elsewhere, a forgotten return value) that would wipe the state.
var ErrEmptyResult = errors.New("statelock: the update function returned no bytes")

// ErrNoDirectory is in the error of a Lock, TryLock, With or Update whose
// state file's directory does not exist, without WithMakeDir(true):
// nothing is created. A mistyped directory would otherwise give a lock,
// and a state file, that no other process ever looks at.
var ErrNoDirectory = errors.New("statelock: the state file's directory does not exist")

// emptyResult is Update's refusal of an empty result.
func emptyResult(stateFile string) error {
	return &exactfs.Error{
		Op: "update", Path: stateFile, Code: exactfs.CodeInvalidRequest,
		Detail: "the update function returned no bytes, which would leave an empty file; " +
			filepath.Base(stateFile) + " was left untouched (return statelock.ErrNoChange to write nothing, " +
			"or pass statelock.WithAllowEmpty(true) to write an empty file)",
		Err: ErrEmptyResult,
	}
}

// noDirectory is a lock call's refusal of a missing directory: what is
// missing, that nothing was made, and the option that makes it.
func noDirectory(dirPath, stateFile string, cause error) error {
	return &exactfs.Error{
		Op: "lock", Path: stateFile, Code: exactfs.CodeNotFound,
		Detail: fmt.Sprintf("the directory %s does not exist; nothing was created "+
			"(check the path, or pass statelock.WithMakeDir(true) to create it, owner-only)", dirPath),
		Err: errors.Join(ErrNoDirectory, cause),
	}
}
