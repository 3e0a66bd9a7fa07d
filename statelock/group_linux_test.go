package statelock

import (
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/exactfs/exactfs/internal/hook"
	"github.com/exactfs/exactfs/internal/testfs"
)

// A batch's write whose directory fsync fails after the early release (the
// power is cut at hook.Committed, as in
// TestEarlyReleaseFsyncErrorIsUnknownOutcome): every caller whose output
// the write carried, and one that said ErrNoChange after them, is told
// ErrOutcomeUnknown; a caller whose function failed is told its own error
// alone. ext4 only, for the reason given there.
func TestGroupCommitUnknownOutcomeToEveryCarriedCaller(t *testing.T) {
	fsys := powerCutFilesystems[0]
	mnt := fsys.mount(t)
	e := newEnvAt(t, filepath.Join(mnt, "d"), filepath.Join(t.TempDir(), "config"))
	errOwn := errors.New("function 1 failed")
	var armed atomic.Bool
	armed.Store(true)
	defer hook.Set(hook.Committed, func(path string) {
		if path == e.state && armed.CompareAndSwap(true, false) {
			testfs.Shutdown(t, mnt)
		}
	})()
	fns := []func([]byte) ([]byte, error){
		appendID(t, e.state, "0", nil, nil),
		func([]byte) ([]byte, error) { return nil, errOwn },
		appendID(t, e.state, "2", nil, nil),
		func([]byte) ([]byte, error) { return nil, ErrNoChange },
	}
	chs, release := queueUpdates(t, e, fns, nil)
	release()
	errs := make([]error, len(chs))
	for i, ch := range chs {
		errs[i] = recv(t, ch)
	}
	for _, i := range []int{0, 2, 3} {
		if !errors.Is(errs[i], ErrOutcomeUnknown) || !strings.Contains(errs[i].Error(), e.state) {
			t.Errorf("Update %d: %v, want ErrOutcomeUnknown naming the state file", i, errs[i])
		}
	}
	if !errors.Is(errs[1], errOwn) || errors.Is(errs[1], ErrOutcomeUnknown) {
		t.Errorf("Update 1: %v, want its own error alone", errs[1])
	}
	remountWhenClosed(t, mnt)
}
