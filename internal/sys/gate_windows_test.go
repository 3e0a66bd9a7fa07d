package sys

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// gateChildEnv makes this test binary a child (see TestMain) that leaves
// the gate as the opt-in decided it when the process started, tries to
// create a directory and a file in the directory the variable names, and
// prints what happened.
const gateChildEnv = "EXACTFS_SYS_GATE_CHILD"

// gateChild is the child's side of TestGateOptInReadAtStart. It runs
// before TestMain touches ready.
func gateChild(dir string) int {
	open, why := GateState()
	fmt.Printf("open=%v\nwhy=%s\n", open, why)
	if err := Mkdir(AtCWD, filepath.Join(dir, "made"), 0o700); err != nil {
		fmt.Printf("mkdir=%v\nunsupported=%v\n", err, errors.Is(err, ErrUnsupported))
	} else {
		fmt.Println("mkdir=ok")
	}
	fd, err := Open(AtCWD, filepath.Join(dir, "made.txt"), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		fmt.Printf("create=%v\n", err)
		return 0
	}
	Close(fd)
	fmt.Println("create=ok")
	return 0
}

// envWithout is os.Environ without name (Windows names are
// case-insensitive).
func envWithout(name string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !strings.EqualFold(k, name) {
			env = append(env, kv)
		}
	}
	return env
}

// TestGateOptInReadAtStart: in a process started without the opt-in, or
// with any value of it but the exact one (an empty one, "1", "true",
// another case, surrounding spaces), the gate is shut, a create is
// refused with ErrUnsupported, the refusal names EXACTFS_WINDOWS=unverified,
// why the gate is shut and where to read what it means, and nothing is
// created. With EXACTFS_WINDOWS=unverified it is open and the same calls
// create. Each case is a fresh process: the variable is read once, at
// start. On the old code the gate was shut in every case.
func TestGateOptInReadAtStart(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		value *string
		open  bool
		why   string
	}{
		{"unset", nil, false, "EXACTFS_WINDOWS is not set"},
		{"empty", ptr(""), false, `EXACTFS_WINDOWS is "", not exactly "unverified"`},
		{"1", ptr("1"), false, `EXACTFS_WINDOWS is "1", not exactly "unverified"`},
		{"true", ptr("true"), false, `EXACTFS_WINDOWS is "true", not exactly "unverified"`},
		{"case", ptr("Unverified"), false, `EXACTFS_WINDOWS is "Unverified", not exactly "unverified"`},
		{"spaces", ptr(" unverified "), false, `EXACTFS_WINDOWS is " unverified ", not exactly "unverified"`},
		{"longer", ptr("unverified-please"), false, `EXACTFS_WINDOWS is "unverified-please", not exactly "unverified"`},
		{"opt-in", ptr("unverified"), true, "EXACTFS_WINDOWS=unverified is set"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			c := exec.Command(exe)
			c.Env = append(envWithout(OptInEnv), gateChildEnv+"="+dir)
			if tc.value != nil {
				c.Env = append(c.Env, OptInEnv+"="+*tc.value)
			}
			var stdout, stderr bytes.Buffer
			c.Stdout, c.Stderr = &stdout, &stderr
			if err := c.Run(); err != nil {
				t.Fatalf("child: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
			}
			out := stdout.String()
			t.Logf("child:\n%s", out)
			if !strings.Contains(out, fmt.Sprintf("open=%v\n", tc.open)) || !strings.Contains(out, "why="+OptInEnv) ||
				!strings.Contains(out, tc.why) {
				t.Fatalf("the child's gate: want open=%v because %q", tc.open, tc.why)
			}
			made := names(t, dir)
			if tc.open {
				if !strings.Contains(out, "mkdir=ok") || !strings.Contains(out, "create=ok") ||
					!slices.Equal(made, []string{"made", "made.txt"}) {
					t.Fatalf("with the opt-in the child did not create: %q", made)
				}
				return
			}
			if len(made) != 0 {
				t.Fatalf("with the gate shut the child created %q", made)
			}
			for _, want := range []string{
				"unsupported=true",
				"exactfs fails closed on Windows (" + tc.why,
				"verified under Wine only",
				"set EXACTFS_WINDOWS=unverified",
				"README.md",
			} {
				if !strings.Contains(out, want) {
					t.Errorf("the refusal lacks %q", want)
				}
			}
		})
	}
}

func ptr(s string) *string { return &s }

// TestGateFromEnv: the decision itself, on values a process could not be
// started with everywhere, and the reason shown for each.
func TestGateFromEnv(t *testing.T) {
	env := func(v string, set bool) func(string) (string, bool) {
		return func(name string) (string, bool) {
			if name != OptInEnv {
				t.Fatalf("looked up %q, want %q", name, OptInEnv)
			}
			return v, set
		}
	}
	for _, tc := range []struct {
		v    string
		set  bool
		open bool
		why  string
	}{
		{"", false, false, "EXACTFS_WINDOWS is not set"},
		{"unverified", true, true, "EXACTFS_WINDOWS=unverified is set: the user accepts what is verified under Wine only"},
		{"unverified\n", true, false, `EXACTFS_WINDOWS is "unverified\n", not exactly "unverified"`},
		{"unverified\x00", true, false, `is "unverified\x00"`},
		{"yes", true, false, `is "yes"`},
		{strings.Repeat("x", 100), true, false, `is "` + strings.Repeat("x", 40) + `..."`},
	} {
		open, why := gateFromEnv(env(tc.v, tc.set))
		if open != tc.open || !strings.Contains(why, tc.why) {
			t.Errorf("%q (set %v): open %v, %q; want open %v, %q", tc.v, tc.set, open, why, tc.open, tc.why)
		}
	}
}

// TestRefusalNamesTheOptIn: ErrUnsupported's text while the gate is shut
// names the opt-in and why the gate is shut; once open, it no longer
// points at the opt-in (what still refuses then is a real limit).
func TestRefusalNamesTheOptIn(t *testing.T) {
	restore := CloseGateForTest()
	shut := ErrUnsupported.Error()
	restore()
	for _, want := range []string{"EXACTFS_WINDOWS=unverified", "shut by a test binary", OptInDoc} {
		if !strings.Contains(shut, want) {
			t.Errorf("the refusal with the gate shut, %q, lacks %q", shut, want)
		}
	}
	restore = OpenGateForTest()
	open := ErrUnsupported.Error()
	restore()
	if strings.Contains(open, OptInEnv) {
		t.Errorf("with the gate open the refusal still points at the opt-in: %q", open)
	}
}
