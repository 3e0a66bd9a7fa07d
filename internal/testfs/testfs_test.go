package testfs

import (
	"fmt"
	"testing"
)

// recorder stands in for a *testing.T to observe what Require decides
// without ending the calling test.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Helper()                          {}
func (r *recorder) Skipf(format string, args ...any) { r.skipped = fmt.Sprintf(format, args...) }
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
}

func TestRequirePolicy(t *testing.T) {
	for _, tc := range []struct {
		ci, strict string
		ok         bool
		want       string // "", "skip" or "fail"
	}{
		{ci: "", ok: true, want: ""},
		{ci: "true", ok: true, want: ""},
		{ci: "", ok: false, want: "skip"},
		{ci: "false", ok: false, want: "skip"},
		{ci: "true", ok: false, want: "fail"},
		{ci: "", strict: "1", ok: false, want: "fail"},
	} {
		t.Run(fmt.Sprintf("CI=%q,STRICT=%q,ok=%v", tc.ci, tc.strict, tc.ok), func(t *testing.T) {
			t.Setenv("CI", tc.ci)
			t.Setenv("EXACTFS_TEST_STRICT", tc.strict)
			r := &recorder{TB: t}
			Require(r, "widget", tc.ok, "no widget here")
			got := ""
			switch {
			case r.skipped != "" && r.failed != "":
				t.Fatalf("both skipped and failed")
			case r.skipped != "":
				got = "skip"
			case r.failed != "":
				got = "fail"
			}
			if got != tc.want {
				t.Fatalf("Require decided %q (skip %q, fail %q), want %q", got, r.skipped, r.failed, tc.want)
			}
		})
	}
}
