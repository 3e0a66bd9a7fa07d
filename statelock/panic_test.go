//go:build unix

package statelock

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// panicValue is what the functions below panic with: a pointer, so the
// value that comes out is provably the very one that went in.
type panicValue struct{ msg string }

// TestUpdatePanicReleasesLock: a function given to Update that panics
// inside a net/http handler (which recovers the panic and keeps the
// process running) leaves the state file untouched and the lock free: the
// next Update, in this process and in another one, takes it at its first
// attempt. The panic itself reaches net/http unchanged.
func TestUpdatePanicReleasesLock(t *testing.T) {
	e := newEnv(t)
	before := []byte(`{"n":41}`)
	if err := os.WriteFile(e.state, before, 0o600); err != nil {
		t.Fatal(err)
	}
	want := &panicValue{"boom"}
	seen := make(chan any, 1)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			v := recover()
			seen <- v
			panic(v) // on to net/http, which recovers it and drops the connection
		}()
		Update(r.Context(), e.state, func(old []byte) ([]byte, error) {
			panic(want)
		}, e.opts()...)
		w.WriteHeader(http.StatusNoContent)
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.Start()
	defer srv.Close()
	if resp, err := http.Get(srv.URL); err == nil {
		resp.Body.Close()
		t.Fatalf("the panicking handler answered %s", resp.Status)
	}
	select {
	case v := <-seen:
		if v != any(want) {
			t.Fatalf("the panic reached the handler as %#v, want %#v", v, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the handler never ran")
	}
	if got := mustRead(t, e.state); !bytes.Equal(got, before) {
		t.Fatalf("state after the panic: %q, want %q unchanged", got, before)
	}

	// One attempt each (a negative wait): the lock must be free now.
	once := e.opts(WithWait(-1))
	if err := Update(context.Background(), e.state, func(old []byte) ([]byte, error) {
		return []byte(`{"n":42}`), nil
	}, once...); err != nil {
		t.Fatalf("the next Update in this process: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := workerCmd(ctx, "update", "STATELOCK_STATE="+e.state, "STATELOCK_CONFIG="+e.configRoot,
		"STATELOCK_N=1", "STATELOCK_WAIT_MS=-1", "STATELOCK_COUNTER_ONLY=1", "STATELOCK_LOG="+filepath.Join(e.dir, "hold.log"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the next Update in another process: %v\n%s", err, out)
	}
	s, err := parseCounter(mustRead(t, e.state))
	if err != nil || s.N != 43 {
		t.Fatalf("state after two more updates: %+v %v, want n=43", s, err)
	}
	assertSteadyState(t, e, false)
}

// TestWithPanicReleasesLock: the same for With, and the panic value that
// comes out of With is the one fn panicked with.
func TestWithPanicReleasesLock(t *testing.T) {
	e := newEnv(t)
	want := &panicValue{"boom"}
	got := func() (v any) {
		defer func() { v = recover() }()
		With(context.Background(), e.state, func() error { panic(want) }, e.opts()...)
		return nil
	}()
	if got != any(want) {
		t.Fatalf("With's panic came out as %#v, want %#v", got, want)
	}
	h, err := TryLock(e.state, e.opts()...)
	if err != nil {
		t.Fatalf("the lock after a panic in With: %v", err)
	}
	if err := h.Unlock(); err != nil {
		t.Fatal(err)
	}
	// And an error from fn is still returned, not swallowed.
	sentinel := errors.New("fn failed")
	if err := With(context.Background(), e.state, func() error { return sentinel }, e.opts()...); !errors.Is(err, sentinel) {
		t.Fatalf("With returned %v, want %v", err, sentinel)
	}
}
