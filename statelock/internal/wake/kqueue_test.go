package wake

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"
)

// The macOS waker's decisions, run here without a Mac: which kevents wake a
// waiter (classify) and what the wait does with them and with a failing
// kqueue (kqLoop). watch_darwin.go only feeds these the kernel's events.

const fileFd, dirFd = 7, 8

func vnode(ident int, fflags uint32) kevent {
	return kevent{Ident: uint64(ident), Filter: kqFilterVnode, Fflags: fflags}
}

func TestKqueueClassify(t *testing.T) {
	for _, c := range []struct {
		name      string
		evs       []kevent
		file, dir int
		want      kqVerdict
	}{
		{"nothing", nil, fileFd, -1, kqNothing},
		{"tombstone written", []kevent{vnode(fileFd, kqNoteWrite)}, fileFd, -1, kqLook},
		{"renamed away (reclaim)", []kevent{vnode(fileFd, kqNoteRename)}, fileFd, -1, kqLook},
		{"deleted", []kevent{vnode(fileFd, kqNoteDelete)}, fileFd, -1, kqLook},
		{"link count", []kevent{vnode(fileFd, kqNoteLink|kqNoteAttrib)}, fileFd, -1, kqLook},
		{"volume revoked", []kevent{vnode(fileFd, kqNoteRevoke)}, fileFd, -1, kqLook},
		{"EOF flag", []kevent{{Ident: fileFd, Filter: kqFilterVnode, Flags: kqEvEOF}}, fileFd, -1, kqLook},
		{"unwatched flag only (NOTE_FUNLOCK)", []kevent{vnode(fileFd, 0x100)}, fileFd, -1, kqNothing},
		{"a descriptor not ours", []kevent{vnode(99, kqNoteWrite)}, fileFd, -1, kqNothing},
		{"directory entry added", []kevent{vnode(dirFd, kqNoteWrite)}, -1, dirFd, kqLook},
		{"directory event after F.lock is watched again", []kevent{vnode(dirFd, kqNoteWrite)}, fileFd, -1, kqNothing},
		{"other filter", []kevent{{Ident: fileFd, Filter: -1, Fflags: kqNoteWrite}}, fileFd, -1, kqNothing},
		{"cancel", []kevent{{Ident: 1, Filter: kqFilterUser}}, fileFd, -1, kqCancel},
		{"cancel and a change", []kevent{vnode(fileFd, kqNoteWrite), {Ident: 1, Filter: kqFilterUser}}, fileFd, -1, kqCancel},
		{"registration refused", []kevent{vnode(fileFd, kqNoteWrite), {Ident: fileFd, Filter: kqFilterVnode, Flags: kqEvError}}, fileFd, -1, kqBroken},
	} {
		if got := classify(c.evs, c.file, c.dir); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// fakeKqueue answers polls from a script, then times out like kevent: it
// sleeps out the timeout it was given and returns no events.
type fakeKqueue struct {
	script []func() ([]kevent, error)
	polls  int
}

func (f *fakeKqueue) poll(left time.Duration) ([]kevent, error) {
	f.polls++
	if len(f.script) > 0 {
		s := f.script[0]
		f.script = f.script[1:]
		return s()
	}
	time.Sleep(left)
	return nil, nil
}

func events(evs ...kevent) func() ([]kevent, error) {
	return func() ([]kevent, error) { return evs, nil }
}

func failing(err error) func() ([]kevent, error) {
	return func() ([]kevent, error) { return nil, err }
}

func TestKqueueLoop(t *testing.T) {
	seen := nameState{dev: 1, ino: 10, nlink: 1, mode: 0o100600, size: 120, mtime: 5, ctime: 5}
	written := seen
	written.mtime, written.ctime = 6, 6
	const d = 30 * time.Millisecond
	run := func(ctx context.Context, f *fakeKqueue, now func() nameState) (bool, time.Time, time.Time, error) {
		deadline := time.Now().Add(d)
		woke, err := kqLoop(ctx, deadline, f.poll, fileFd, -1, now, seen)
		return woke, deadline, time.Now(), err
	}
	same := func() nameState { return seen }

	t.Run("a change wakes", func(t *testing.T) {
		f := &fakeKqueue{script: []func() ([]kevent, error){events(vnode(fileFd, kqNoteWrite))}}
		woke, _, _, err := run(context.Background(), f, func() nameState { return written })
		if !woke || err != nil {
			t.Fatalf("woke %v, %v", woke, err)
		}
	})
	t.Run("a rename away wakes", func(t *testing.T) {
		f := &fakeKqueue{script: []func() ([]kevent, error){events(vnode(fileFd, kqNoteRename))}}
		woke, _, _, err := run(context.Background(), f, func() nameState { return nameState{absent: true} })
		if !woke || err != nil {
			t.Fatalf("woke %v, %v", woke, err)
		}
	})
	// An event after which F.lock shows what it showed (a reader's atime,
	// a neighbour's entry) sleeps on to the same deadline: without this a
	// waiter whose own attempts make events would never sleep.
	t.Run("an event that changed nothing sleeps on", func(t *testing.T) {
		f := &fakeKqueue{script: []func() ([]kevent, error){
			events(vnode(fileFd, kqNoteAttrib)), events(vnode(99, kqNoteWrite)), events(vnode(fileFd, kqNoteWrite)),
		}}
		woke, deadline, end, err := run(context.Background(), f, same)
		if woke || err != nil || end.Before(deadline) || f.polls != 4 {
			t.Fatalf("woke %v, %v, %d polls, %v before the deadline", woke, err, f.polls, deadline.Sub(end))
		}
	})
	t.Run("EINTR polls again", func(t *testing.T) {
		f := &fakeKqueue{script: []func() ([]kevent, error){failing(syscall.EINTR), events(vnode(fileFd, kqNoteWrite))}}
		woke, _, _, err := run(context.Background(), f, func() nameState { return written })
		if !woke || err != nil || f.polls != 2 {
			t.Fatalf("woke %v, %v after %d polls", woke, err, f.polls)
		}
	})
	// A kqueue that fails (closed, EBADF; a refused registration, EV_ERROR)
	// is no waker any more: the wait becomes a plain timed sleep to the
	// same deadline, never an early return that would make the waiter spin
	// (issue 24 item 1's failure, there for want of inotify).
	for name, step := range map[string]func() ([]kevent, error){
		"closed kqueue":       failing(syscall.EBADF),
		"refused watch":       events(kevent{Ident: fileFd, Filter: kqFilterVnode, Flags: kqEvError}),
		"kqueue out of space": failing(syscall.ENOMEM),
	} {
		t.Run(name+" sleeps out the wait", func(t *testing.T) {
			f := &fakeKqueue{script: []func() ([]kevent, error){step}}
			woke, deadline, end, err := run(context.Background(), f, func() nameState { return written })
			if woke || err != nil || end.Before(deadline) || f.polls != 1 {
				t.Fatalf("woke %v, %v, %d polls, returned %v before the deadline", woke, err, f.polls, deadline.Sub(end))
			}
		})
	}
	t.Run("a closed kqueue still honours the context", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		f := &fakeKqueue{script: []func() ([]kevent, error){func() ([]kevent, error) { cancel(); return nil, syscall.EBADF }}}
		_, _, _, err := run(ctx, f, same)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("the context's trigger", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		f := &fakeKqueue{script: []func() ([]kevent, error){func() ([]kevent, error) {
			cancel()
			return []kevent{{Ident: 1, Filter: kqFilterUser}}, nil
		}}}
		_, _, _, err := run(ctx, f, same)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("a stale trigger of an earlier wait is ignored", func(t *testing.T) {
		f := &fakeKqueue{script: []func() ([]kevent, error){events(kevent{Ident: 1, Filter: kqFilterUser})}}
		woke, deadline, end, err := run(context.Background(), f, same)
		if woke || err != nil || end.Before(deadline) {
			t.Fatalf("woke %v, %v, %v before the deadline", woke, err, deadline.Sub(end))
		}
	})
}
