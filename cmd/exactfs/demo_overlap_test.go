package main

import (
	"testing"

	"github.com/exactfs/exactfs/internal/holdlog"
)

// TestKilledHoldOverlaps: a worker killed inside its critical section has
// an enter and no exit, which holdlog.Check leaves out of its overlap
// check; the demo counts it as held from its enter to its kill. A section
// that began before the kill and ended after the victim's enter is an
// overlap, as is a second killed holder whose hold crosses the first's;
// sections after the kill, and a kill without a matching log, are not.
// The old report checked closed sections only and passed all of these.
func TestKilledHoldOverlaps(t *testing.T) {
	victim := holdlog.Interval{PID: 10, Enter: 100, Where: "d/holds-0-1.log:3"}
	other := holdlog.Interval{PID: 11, Enter: 500, Where: "d/holds-0-2.log:1"}
	kills := map[string]int64{"d/holds-0-1.log": 200, "d/holds-0-2.log": 600}
	for _, tc := range []struct {
		name    string
		closed  []holdlog.Interval
		open    []holdlog.Interval
		want    int
		checked int
	}{
		{"successor after the kill", []holdlog.Interval{{PID: 2, Enter: 250, Exit: 300, Where: "d/holds-1-1.log:1"}}, []holdlog.Interval{victim}, 0, 1},
		{"before the victim's enter", []holdlog.Interval{{PID: 2, Enter: 50, Exit: 100, Where: "d/holds-1-1.log:1"}}, []holdlog.Interval{victim}, 0, 1},
		{"entered while the victim held", []holdlog.Interval{{PID: 2, Enter: 150, Exit: 300, Where: "d/holds-1-1.log:1"}}, []holdlog.Interval{victim}, 1, 1},
		{"held across the victim's enter", []holdlog.Interval{{PID: 2, Enter: 50, Exit: 120, Where: "d/holds-1-1.log:1"}}, []holdlog.Interval{victim}, 1, 1},
		{"two killed holders apart", nil, []holdlog.Interval{victim, other}, 0, 2},
		{"two killed holders at once", nil, []holdlog.Interval{victim, {PID: 11, Enter: 150, Where: "d/holds-0-2.log:1"}}, 1, 2},
		{"no kill recorded for the log", []holdlog.Interval{{PID: 2, Enter: 150, Exit: 300, Where: "d/holds-1-1.log:1"}},
			[]holdlog.Interval{{PID: 12, Enter: 100, Where: "d/holds-2-1.log:1"}}, 0, 0},
	} {
		got, checked := killedHoldOverlaps(holdlog.Report{Intervals: tc.closed, Open: tc.open}, kills)
		if len(got) != tc.want {
			t.Errorf("%s: %d overlaps %q, want %d", tc.name, len(got), got, tc.want)
		}
		if want := tc.checked; checked != want {
			t.Errorf("%s: %d killed holders' sections checked, want %d", tc.name, checked, want)
		}
	}
	// A log whose name is another's prefix is not mistaken for it.
	if got, _ := killedHoldOverlaps(holdlog.Report{
		Intervals: []holdlog.Interval{{PID: 2, Enter: 150, Exit: 300, Where: "d/holds-1-1.log:1"}},
		Open:      []holdlog.Interval{{PID: 13, Enter: 100, Where: "d/holds-0-10.log:1"}},
	}, map[string]int64{"d/holds-0-1": 200, "d/holds-0-1.log": 200}); len(got) != 0 {
		t.Errorf("a kill of holds-0-1.log was matched to holds-0-10.log: %q", got)
	}
}
