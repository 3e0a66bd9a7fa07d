package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/internal/holdlog"
	"github.com/exactfs/exactfs/liveness"
	"github.com/exactfs/exactfs/statelock"
)

// report checks the invariants and prints the table. It returns whether
// every invariant holds.
func (r *demoRun) report(elapsed time.Duration) bool {
	w := r.e.stdout
	var problems []string
	data, _, err := exactfs.Capture(r.state)
	var st demoState
	if err == nil {
		st, err = parseDemoState(data)
	}
	if err != nil {
		problems = append(problems, fmt.Sprintf("the state file cannot be read: %v", err))
	}
	seen := map[string]int{}
	for _, id := range st.Applied {
		seen[id]++
	}
	lost, dup := 0, 0
	for id := range r.acked {
		if seen[id] == 0 {
			lost++
		}
	}
	for _, n := range seen {
		if n > 1 {
			dup += n - 1
		}
	}
	hold, herr := holdlog.Check(true, r.holdLogs...)
	killedOverlaps, killedChecked := killedHoldOverlaps(hold, r.killedHolds)
	overlaps := len(hold.Overlaps) + len(killedOverlaps)
	if herr != nil && overlaps == 0 {
		problems = append(problems, fmt.Sprintf("hold logs: %v", herr))
	}
	if lost > 0 {
		problems = append(problems, fmt.Sprintf("%d acknowledged updates are missing from the state file", lost))
	}
	if dup > 0 {
		problems = append(problems, fmt.Sprintf("%d updates are in the state file more than once", dup))
	}
	if overlaps > 0 {
		problems = append(problems, fmt.Sprintf("%d pairs of critical sections overlapped", overlaps))
	}
	problems = append(problems, killedOverlaps...)
	if len(st.Applied) != r.expected {
		problems = append(problems, fmt.Sprintf("the state file holds %d updates, expected %d", len(st.Applied), r.expected))
	}
	if len(r.acked) != r.expected {
		problems = append(problems, fmt.Sprintf("%d distinct updates were acknowledged, expected %d", len(r.acked), r.expected))
	}
	reclaimWaits, unreclaimed := reclaims(r.holderKills, r.enters)
	maxReclaim := time.Duration(slices.Max(append(reclaimWaits, 0)))
	if unreclaimed > 0 {
		problems = append(problems, fmt.Sprintf("%d locks of killed holders were never taken over", unreclaimed))
	}
	if maxReclaim >= statelock.DefaultWait {
		problems = append(problems, fmt.Sprintf("a killed holder's lock was taken over only after %v: the wait budget ran out instead of a reclaim", maxReclaim))
	}
	lockState := "free (released tombstone)"
	ls, err := statelock.Inspect(r.state, statelock.WithHostIdentity(liveness.FixedHostIdentity(r.hostID)))
	switch {
	case err != nil:
		lockState = "not inspectable"
		problems = append(problems, "the lock cannot be inspected after the run: "+err.Error())
	case ls.State != statelock.StateReleased || ls.Claim.Present:
		lockState = string(ls.State)
		problems = append(problems, fmt.Sprintf("after every worker finished, the lock is %s (claim present: %v)", ls.State, ls.Claim.Present))
	}

	row := func(name string, value any, note string) {
		if note != "" {
			note = "   " + note
		}
		fmt.Fprintf(w, "  %-38s %10v%s\n", name, value, note)
	}
	fmt.Fprintln(w)
	row("expected updates", r.expected, "")
	row("found in the state file", len(st.Applied), "")
	row("lost updates", lost, "(must be 0)")
	row("duplicated updates", dup, "(must be 0)")
	checked := fmt.Sprintf("(must be 0; %d critical sections checked by %s", len(hold.Intervals), demoClock)
	if killedChecked > 0 {
		checked += fmt.Sprintf(", and %d of holders killed inside them, up to the kill", killedChecked)
	}
	row("overlapping holds", overlaps, checked+")")
	if r.o.chaos {
		row("workers killed with "+demoKill, r.kills, fmt.Sprintf("(%d while holding the lock; each restarted)", len(r.holderKills)))
		row("locks reclaimed from killed holders", len(reclaimWaits), fmt.Sprintf("(kill to next holder: p50 %v, max %v; budget %v)",
			pctDur(reclaimWaits, 50), pctDur(reclaimWaits, 100), statelock.DefaultWait))
		if r.o.anywhere {
			row("redone updates found already written", r.dups, "(a killed worker's write had landed; not applied twice)")
		}
	}
	row("waits that ran out the budget", r.retries, "")
	row("time to acquire p50 / p99", pctDur(r.acquire, 50).String()+" / "+pctDur(r.acquire, 99).String(), "")
	row("throughput", fmt.Sprintf("%.0f/s", float64(r.expected)/elapsed.Seconds()), fmt.Sprintf("(%d updates in %v)", r.expected, elapsed.Round(time.Millisecond*10)))
	row("lock after the run", lockState, "")
	fmt.Fprintln(w)
	if len(problems) > 0 {
		fmt.Fprintln(w, "FAIL:")
		for _, p := range problems {
			fmt.Fprintln(w, "  - "+p)
		}
		if herr != nil && overlaps > 0 {
			fmt.Fprintln(w, herr)
		}
		return false
	}
	fmt.Fprintln(w, "PASS: every acknowledged update is in the state file exactly once, and no two")
	if r.o.chaos {
		fmt.Fprintln(w, "holders overlapped; every lock left by a killed holder was reclaimed at once.")
	} else {
		fmt.Fprintln(w, "holders overlapped.")
	}
	return true
}

// pctDur returns the p-th percentile of ns values as a rounded duration.
func pctDur(ns []int64, p int) time.Duration {
	if len(ns) == 0 {
		return 0
	}
	s := slices.Clone(ns)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	i = min(max(i-1, 0), len(s)-1)
	d := time.Duration(s[i])
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(100 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}

// reclaims pairs every kill of a holder with the first critical section
// entered after it (by any worker): the moment its lock was taken over.
func reclaims(kills, enters []int64) (waits []int64, unreclaimed int) {
	sorted := slices.Clone(enters)
	slices.Sort(sorted)
	for _, k := range kills {
		i, _ := slices.BinarySearch(sorted, k+1)
		if i == len(sorted) {
			unreclaimed++
			continue
		}
		waits = append(waits, sorted[i]-k)
	}
	return waits, unreclaimed
}

// killedHoldOverlaps checks the critical sections holdlog.Check leaves out:
// those of workers killed inside them, which have an enter and no exit.
// Such a worker held the lock from its enter until it died, which is no
// earlier than the moment the controller killed it (kills maps the hold
// log of each incarnation killed holding the lock to that moment), so any
// other critical section that began before that moment and ended after
// the enter overlapped it: a second holder while the first was provably
// alive. An open interval without a recorded kill (a worker that died on
// its own) is not checked here; the run fails for that worker anyway.
// checked is the number of killed holders' sections checked.
func killedHoldOverlaps(hold holdlog.Report, kills map[string]int64) (out []string, checked int) {
	type held struct {
		holdlog.Interval
		until int64
	}
	var open []held
	for _, iv := range hold.Open {
		for log, k := range kills {
			if strings.HasPrefix(iv.Where, log+":") && k > iv.Enter {
				open = append(open, held{iv, k})
			}
		}
	}
	for i, a := range open {
		for _, c := range hold.Intervals {
			if c.Enter < a.until && c.Exit > a.Enter {
				out = append(out, fmt.Sprintf("pid %d entered at %d (%s), while pid %d, killed at %d, held the lock since %d (%s)",
					c.PID, c.Enter, c.Where, a.PID, a.until, a.Enter, a.Where))
			}
		}
		for _, b := range open[i+1:] {
			if b.Enter < a.until && b.until > a.Enter {
				out = append(out, fmt.Sprintf("pid %d (entered at %d, killed at %d) and pid %d (entered at %d, killed at %d) held the lock at once (%s, %s)",
					a.PID, a.Enter, a.until, b.PID, b.Enter, b.until, a.Where, b.Where))
			}
		}
	}
	return out, len(open)
}
