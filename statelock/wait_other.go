//go:build !linux

package statelock

import (
	"context"
	"time"
)

// waker has no change notification here: waits are timed sleeps.
type waker struct{}

func newWaker(dirPath, name string) *waker { return nil }

func (w *waker) wait(ctx context.Context, d time.Duration, first bool) (bool, error) {
	return false, sleepCtx(ctx, d)
}

func (w *waker) close() {}
