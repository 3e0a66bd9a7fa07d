package exactfs

import (
	"errors"
	"io/fs"
	"testing"
)

// A Class is one sentinel for several codes, and an outcome like a code's
// sentinel: the outermost *Error answers it, never a cause below.
func TestClassMatchesItsCodesOutermostOnly(t *testing.T) {
	const held, waited, other Code = "held_here", "waited_out", "other_failure"
	busy := Class("busy", held, waited)
	for _, c := range []Code{held, waited} {
		if err := error(&Error{Path: "/x", Code: c}); !errors.Is(err, busy) {
			t.Errorf("%s does not match its class", c)
		}
	}
	inner := &Error{Path: "/x", Code: held}
	outer := error(&Error{Path: "/x", Code: other, Err: inner})
	if errors.Is(outer, busy) {
		t.Error("a cause's code answered the class of the outer error")
	}
	var got *Error
	if !errors.As(outer, &got) || got.Code != other || !errors.As(got.Err, &got) || got.Code != held {
		t.Error("the cause is not reachable with errors.As")
	}
	if errors.Is(&Error{Code: CodeNotFound}, busy) || !errors.Is(&Error{Code: CodeNotFound}, fs.ErrNotExist) {
		t.Error("the class changed how other codes match")
	}
}

// An Error without an Op is its sentence, its code, then its cause.
func TestErrorWithoutOpIsItsSentence(t *testing.T) {
	cause := &Error{Op: "open", Path: "/x/s.lock", Code: CodeNotFound}
	err := &Error{Path: "/x/s.lock", Code: "lock_initialization_failed", Detail: "cannot take s.lock", Err: cause}
	want := "cannot take s.lock (lock_initialization_failed): open /x/s.lock: nothing is there (not_found)"
	if err.Error() != want {
		t.Errorf("got  %q\nwant %q", err.Error(), want)
	}
	bare := &Error{Path: "/x/s.lock", Code: "lock_release_failed"}
	if want := "/x/s.lock: lock release failed (lock_release_failed)"; bare.Error() != want {
		t.Errorf("got  %q\nwant %q", bare.Error(), want)
	}
}

// TestPermissionDeniedSaidOnce: an EACCES wrapped as permission_denied
// reads "open p: permission denied (permission_denied)", not the same
// words twice before the code (issue 20: "printed three times").
func TestPermissionDeniedSaidOnce(t *testing.T) {
	e := &Error{Op: "open", Path: "p", Code: CodePermissionDenied, Err: errors.New("permission denied")}
	if got, want := e.Error(), "open p: permission denied (permission_denied)"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	e.Detail = "owned by uid 7"
	if got, want := e.Error(), "open p: owned by uid 7: permission denied (permission_denied)"; got != want {
		t.Errorf("with a detail: %q, want %q", got, want)
	}
}

// quietCause is a cause type that only carries fields: its message is the
// error it wraps, or empty (statelock's *WaitError is one).
type quietCause struct{ err error }

func (q *quietCause) Error() string {
	if q.err == nil {
		return ""
	}
	return q.err.Error()
}

func (q *quietCause) Unwrap() error { return q.err }

// A cause whose message is empty adds nothing to the message, in either
// form, and one that wraps an error prints as it; errors.As reaches it.
func TestEmptyCauseAddsNothing(t *testing.T) {
	for _, tc := range []struct {
		err  *Error
		want string
	}{
		{&Error{Path: "/x/f.lock", Code: "held_here", Detail: "f.lock is locked", Err: &quietCause{}},
			"f.lock is locked (held_here)"},
		{&Error{Path: "/x/f.lock", Code: "held_here", Detail: "f.lock is locked", Err: &quietCause{errors.New("boom")}},
			"f.lock is locked (held_here): boom"},
		{&Error{Op: "open", Path: "/x/f", Code: CodeIOError, Err: &quietCause{}},
			"open /x/f: the filesystem failed the operation (io_error)"},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("got  %q\nwant %q", got, tc.want)
		}
		var q *quietCause
		if !errors.As(tc.err, &q) {
			t.Errorf("%q: the cause is not reachable", tc.err)
		}
	}
}
