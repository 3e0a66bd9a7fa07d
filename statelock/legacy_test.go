//go:build unix

package statelock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/exactfs/exactfs/internal/hook"
)

// legacyDir plants a legacy F.lock/ directory with the given info bytes
// (none when nil), aged by age.
func (e *testEnv) legacyDir(t *testing.T, info []byte, age time.Duration) {
	t.Helper()
	if err := os.Mkdir(e.lock, 0o700); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-age)
	if info != nil {
		p := filepath.Join(e.lock, "info")
		os.WriteFile(p, info, 0o600)
		os.Chtimes(p, old, old)
	}
	os.Chtimes(e.lock, old, old)
}

func legacyInfoFor(pid int, host string) []byte {
	s := fmt.Sprintf(`{"pid":%d,"start_time":"Tue Dec  2 09:40:00 2026","timestamp":%d`, pid, time.Now().UnixMilli())
	if host != "" {
		s += `,"owner_host_id":"` + host + `"`
	}
	return []byte(s + "}")
}

func treeOf(t *testing.T, dir string) map[string]fileState {
	t.Helper()
	m := map[string]fileState{}
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		st := fileState{ino: fi.Sys().(*syscall.Stat_t).Ino}
		if fi.Mode().IsRegular() {
			st.data = mustRead(t, p)
		}
		m[p] = st
		return nil
	})
	return m
}

func assertTreeSame(t *testing.T, dir string, want map[string]fileState) {
	t.Helper()
	got := treeOf(t, dir)
	if len(got) != len(want) {
		t.Fatalf("tree %s changed: %v vs %v", dir, got, want)
	}
	for p, w := range want {
		if g, ok := got[p]; !ok || g.ino != w.ino || string(g.data) != string(w.data) {
			t.Fatalf("tree %s changed at %s", dir, p)
		}
	}
}

func TestLegacyDirectoryDeadOwnerReclaimed(t *testing.T) {
	e := newEnv(t)
	e.legacyDir(t, legacyInfoFor(4242, e.host.ID), time.Minute)
	h, err := TryLock(e.state, e.opts(probeSays(syscall.ESRCH))...)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(e.lock); err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("F.lock after reclaiming the legacy directory: %v %v", fi, err)
	}
	h.Unlock()
}

func TestLegacyDirectoryEmptyAndOld(t *testing.T) {
	e := newEnv(t)
	e.legacyDir(t, nil, time.Minute)
	h, err := TryLock(e.state, e.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	h.Unlock()
}

func TestLegacyDirectoryKept(t *testing.T) {
	for name, c := range map[string]struct {
		info []byte
		age  time.Duration
		opts []Option
	}{
		"live owner":                   {legacyInfoFor(os.Getppid(), ""), time.Hour, []Option{WithHostLocal(true)}},
		"malformed info, an hour old":  {[]byte(`{"pid":`), time.Hour, []Option{probeSays(syscall.ESRCH)}},
		"foreign host, dead pid":       {legacyInfoFor(4242, "f00d"), time.Hour, []Option{probeSays(syscall.ESRCH)}},
		"unqualified, not host-local":  {legacyInfoFor(4242, ""), time.Hour, []Option{probeSays(syscall.ESRCH)}},
		"empty and younger than 30s":   {nil, time.Second, nil},
		"live owner with this host id": {nil, time.Hour, nil},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			info := c.info
			if name == "live owner with this host id" {
				info = legacyInfoFor(os.Getppid(), e.host.ID)
			}
			e.legacyDir(t, info, c.age)
			before := treeOf(t, e.lock)
			_, err := TryLock(e.state, e.opts(c.opts...)...)
			var le *LockError
			if !errors.As(err, &le) || le.Code != ReasonLegacyUnprovenanced || !errors.Is(err, ErrLocked) {
				t.Fatalf("TryLock: %v", err)
			}
			assertTreeSame(t, e.lock, before)
		})
	}
}

// A legacy writer replaces the judged directory with a live one after the
// verdict: the successor survives identical.
func TestLegacyDirectoryReplacedAfterVerdict(t *testing.T) {
	e := newEnv(t)
	e.legacyDir(t, legacyInfoFor(4242, e.host.ID), time.Minute)
	var successor map[string]fileState
	defer hook.Set(hook.LockAfterLegacyVerdict, hook.Once(func(string) {
		os.RemoveAll(e.lock)
		os.Mkdir(e.lock, 0o700)
		os.WriteFile(filepath.Join(e.lock, "info"), legacyInfoFor(os.Getppid(), e.host.ID), 0o600)
		successor = treeOf(t, e.lock)
	}))()
	dead4242 := withProber(probe{signal: func(pid int) error {
		if pid == 4242 {
			return syscall.ESRCH
		}
		return nil
	}})
	if _, err := TryLock(e.state, e.opts(dead4242)...); !errors.Is(err, ErrLocked) {
		t.Fatalf("TryLock: %v", err)
	}
	assertTreeSame(t, e.lock, successor)
}
