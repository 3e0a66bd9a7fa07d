package idle

import (
	"errors"
	"testing"

	"github.com/exactfs/exactfs/internal/sys"
)

// The mapping from a probe's result to an Answer, on every platform: only
// the kernel's own "no" is No.
func TestAnswer(t *testing.T) {
	cases := []struct {
		res  error
		want Answer
	}{
		{nil, No},
		{sys.ErrWouldBlock, Yes},
		{sys.ErrUnsupported, Unknown},
		{errors.New("EINVAL"), Unknown},
	}
	for _, c := range cases {
		got, why := answer(c.res, "busy")
		if got != c.want || (got == No) != (why == "") {
			t.Errorf("answer(%v) = %v %q, want %v (a reason unless No)", c.res, got, why, c.want)
		}
	}
	if Answer(0) != Unknown || Unknown.String() != "unknown" {
		t.Error("the zero Answer must be Unknown")
	}
}
