package main

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/exactfs/exactfs/etcd"
	"github.com/exactfs/exactfs/locker"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

func TestExitCodes(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code int
	}{
		{nil, 0},
		{exitStatus(3), 3},
		{usagef("x"), exitUsage},
		{&etcd.URLError{URL: "u", Msg: "m"}, exitUsage},
		{&etcd.LockError{Key: "k", Err: locker.ErrLocked}, exitBusy},
		{busyStatus{err: &etcd.LockError{Key: "k", Err: locker.ErrLocked}, status: 9}, 9},
		{fmt.Errorf("wrapped: %w", &etcd.LostError{Key: "k", Op: "commit"}), exitBusy},
		{fmt.Errorf("x: %w", etcd.ErrStateChanged), exitMismatch},
		{&etcd.UnavailableError{Step: "s", Endpoints: "e", Err: errors.New("down")}, exitIO},
		{&etcd.UnknownOutcomeError{Key: "k", Err: &etcd.LostError{}}, exitUnknown},
		{&etcd.HolderAliveError{R: &etcd.Release{Lock: "k"}}, exitBusy},
		{&etcd.HolderChangedError{Lock: "k", Want: 7}, exitMismatch},
		{errors.New("other"), exitIO},
	} {
		if got := exitCode(tc.err); got != tc.code {
			t.Errorf("exitCode(%v) = %d, want %d", tc.err, got, tc.code)
		}
	}
}

// TestHelpListsExitStatuses: every command's help, and the overview, list
// the exit statuses, 71 (an unknown commit outcome) included.
func TestHelpListsExitStatuses(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"help", "update"}, {"help", "lock"}, {"help", "recover"}, {"status", "-h"}} {
		var out, errb bytes.Buffer
		e := &env{prog: "exactfs-etcd", stdout: &out, stderr: &errb, getenv: func(string) string { return "" }}
		if code := run(e, args); code != exitOK {
			t.Fatalf("%v: exit %d", args, code)
		}
		for _, want := range []string{"\n  71   update: the commit got no answer", "\n  75 ", "\n  76 "} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("%v: the help does not list %q", args, strings.TrimSpace(want))
			}
		}
	}
}

func TestDurationFlag(t *testing.T) {
	for in, want := range map[string]time.Duration{"5s": 5 * time.Second, "2.5": 2500 * time.Millisecond, "1m": time.Minute, "0": 0} {
		var f durationFlag
		if err := f.Set(in); err != nil || f.d != want {
			t.Errorf("Set(%q): %v, %v; want %v", in, f.d, err, want)
		}
	}
	for _, in := range []string{"-1s", "soon", ""} {
		var f durationFlag
		if err := f.Set(in); err == nil {
			t.Errorf("Set(%q) accepted", in)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		has  string
	}{
		{nil, "usage: exactfs-etcd COMMAND"},
		{[]string{"update"}, "missing URL"},
		{[]string{"update", "etcd://h/k"}, "missing CMD"},
		{[]string{"lock", "--conflict-exit-code", "300", "etcd://h/k", "--", "true"}, "between 0 and 255"},
		{[]string{"lock", "--timeout", "soon", "etcd://h/k", "--", "true"}, "want a duration"},
		{[]string{"status", "a", "b"}, "exactly one URL"},
		{[]string{"update", "./state.json", "--", "cat"}, "not an etcd URL"},
		{[]string{"recover", "--release-holder", "-3", "etcd://h/k"}, "wants the holder's token"},
		{[]string{"recover", "--release-holder", "soon", "etcd://h/k"}, "invalid value"},
		{[]string{"recover", "--even-if-alive", "etcd://h/k"}, "goes with --release-holder"},
	} {
		var out, errb bytes.Buffer
		e := &env{prog: "exactfs-etcd", stdout: &out, stderr: &errb, getenv: func(string) string { return "" }}
		if code := run(e, tc.args); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", tc.args, code, exitUsage)
		}
		if !strings.Contains(errb.String(), tc.has) {
			t.Errorf("%v: stderr %q does not say %q", tc.args, errb.String(), tc.has)
		}
	}
}

// TestStatusOfUnleasedHolder: a holder key bound to no lease is described
// as such (it printed "lease , no lease").
func TestStatusOfUnleasedHolder(t *testing.T) {
	q := &etcd.Queue{Key: "/k", Prefix: "/k.lock/", Entries: []etcd.Entry{{Key: "/k.lock/x", Token: 5, Bad: "not holder metadata"}}}
	st := &statusJSON{URL: "etcd://h/k", Prefix: q.Prefix, Lock: "held"}
	j := entryOf(q.Entries[0])
	st.Holder = &j
	var out bytes.Buffer
	writeStatus(&out, st, q)
	if s := out.String(); strings.Contains(s, "lease ,") || !strings.Contains(s, "token 5, bound to no lease") {
		t.Errorf("status of a lease-less holder:\n%s", s)
	}
}

// TestHintForTooLargeValue: etcd's request size limit gets a hint.
func TestHintForTooLargeValue(t *testing.T) {
	e := &env{prog: "exactfs-etcd"}
	err := fmt.Errorf("committing /k: %w", rpctypes.ErrRequestTooLarge)
	if h := hintFor(e, err); !strings.Contains(h, "--max-request-bytes") {
		t.Errorf("hint for %v: %q", err, h)
	}
}
