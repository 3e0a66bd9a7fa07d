package exactfs

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
		{nil, AnswerNo},
		{sys.ErrWouldBlock, AnswerYes},
		{sys.ErrUnsupported, AnswerUnknown},
		{errors.New("EINVAL"), AnswerUnknown},
	}
	for _, c := range cases {
		got, why := openAnswer(c.res, "busy")
		if got != c.want || (got == AnswerNo) != (why == "") {
			t.Errorf("answer(%v) = %v %q, want %v (a reason unless No)", c.res, got, why, c.want)
		}
	}
	if Answer(0) != AnswerUnknown || AnswerUnknown.String() != "unknown" {
		t.Error("the zero Answer must be Unknown")
	}
}
