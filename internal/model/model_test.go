package model

import (
	"fmt"
	"os"
	"regexp"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
)

// checked memoizes Check of the correct protocol per configuration: the
// bad-variant test compares against configurations TestProtocolHolds has
// already explored (-race makes each exploration several times slower).
var checked sync.Map // name(Config) -> *Result

func checkGood(t *testing.T, c Config) *Result {
	t.Helper()
	if r, ok := checked.Load(name(c)); ok {
		return r.(*Result)
	}
	c.Coverage = true
	r, err := Check(c)
	if err != nil {
		t.Fatal(err)
	}
	checked.Store(name(c), r)
	return r
}

// large reports whether the long configurations run
// (EXACTFS_MODEL_LARGE=1; about a million states each, seconds without
// -race).
func large() bool { return os.Getenv("EXACTFS_MODEL_LARGE") != "" }

func name(c Config) string {
	kinds := make([]string, len(c.Procs))
	for i, k := range c.Procs {
		kinds[i] = k.String()
	}
	s := fmt.Sprintf("%s/acq%d/crash%d/restart%d", strings.Join(kinds, "+"), c.Acquisitions, c.Crashes, c.Restarts)
	if c.PowerCut {
		s += "/powercut"
	}
	if c.DeadSidecar {
		s += "/deadsidecar"
	}
	return s
}

// holding are the configurations the protocol as SPEC §4 and §4.8 state
// it must pass, every property, in CI.
var holding = []Config{
	// 2 Go cohort + 1 TypeScript, 2 acquisitions each: hand-offs, sticky
	// ownership, TypeScript interleaved at every step.
	{Procs: []Kind{Cohort, Cohort, TS}, Acquisitions: 2},
	// a crash anywhere, and the crashed process back as a new process.
	{Procs: []Kind{Cohort, Cohort, TS}, Acquisitions: 1, Crashes: 1, Restarts: 1},
	{Procs: []Kind{Cohort, Cohort}, Acquisitions: 2, Crashes: 1, Restarts: 1},
	// a sticky owner (§4.8.3) killed while it keeps F.lock, judged by
	// TypeScript by its pid, and back as a new process.
	{Procs: []Kind{Cohort, TS}, Acquisitions: 2, Crashes: 1, Restarts: 1},
	// sticky again after a re-lock, beside TypeScript, with a crash.
	{Procs: []Kind{Cohort, TS}, Acquisitions: 3, Crashes: 1, Restarts: 1},
	// a Go process on the reference path beside the cohort and TypeScript.
	{Procs: []Kind{Cohort, Ref, TS}, Acquisitions: 2},
	{Procs: []Kind{Cohort, Ref, TS}, Acquisitions: 1, Crashes: 1},
	// write-back in any order and a power cut after any step.
	{Procs: []Kind{Cohort, Ref, TS}, Acquisitions: 1, Crashes: 1, PowerCut: true},
	// today's exactfs on the same directory (§4.8.5: an older judge reads
	// any slot lock as alive). No power cut: see TestTodaysClaimReleaseHole.
	{Procs: []Kind{Cohort, Old, TS}, Acquisitions: 2},
	{Procs: []Kind{Cohort, Cohort, Old}, Acquisitions: 1, Crashes: 1},
	// a dead record in the sidecar outside any claim (what a power cut
	// can leave), met by Go takers that may crash (no TypeScript process:
	// it would fail on that sidecar by itself, T1, before any Go step).
	{Procs: []Kind{Cohort, Ref}, Acquisitions: 1, Crashes: 1, DeadSidecar: true},
}

// holdingLarge run with EXACTFS_MODEL_LARGE=1.
var holdingLarge = []Config{
	// three acquisitions each: sticky, re-locked, sticky again, and the
	// hand-offs and yields between two cohort members beside TypeScript.
	{Procs: []Kind{Cohort, Cohort, TS}, Acquisitions: 3},
	{Procs: []Kind{Cohort, Cohort, TS}, Acquisitions: 2, Crashes: 1},
	{Procs: []Kind{Cohort, Cohort, TS}, Acquisitions: 2, Crashes: 1, Restarts: 1},
	{Procs: []Kind{Cohort, Ref, TS}, Acquisitions: 2, Crashes: 1, PowerCut: true},
	{Procs: []Kind{Cohort, Cohort, Ref, TS}, Acquisitions: 1, Crashes: 1},
	{Procs: []Kind{Cohort, Cohort, Cohort, TS}, Acquisitions: 1, Crashes: 1},
	{Procs: []Kind{Cohort, Cohort, TS}, Acquisitions: 1, Crashes: 2, Restarts: 1},
	{Procs: []Kind{Cohort, Cohort, Old, TS}, Acquisitions: 1, Crashes: 1},
	{Procs: []Kind{Cohort, Cohort, Ref}, Acquisitions: 1, Crashes: 1, DeadSidecar: true},
}

// TestProtocolHolds explores every interleaving of each configuration and
// requires every property: mutual exclusion, no tombstone during a
// hand-off, no TypeScript operation failed, no Go record changed under its
// owner, no power cut that leaves T1 behind, no strand of the Go side.
func TestProtocolHolds(t *testing.T) {
	// The states hold no pointers, so a collection costs little, and the
	// garbage (each transition's copy of a state) would otherwise grow to
	// the size of the live heap before one runs: the peak of the large
	// stage is its live heap plus a fifth.
	defer debug.SetGCPercent(debug.SetGCPercent(20))
	cfgs := holding
	if large() {
		cfgs = append(append([]Config(nil), holding...), holdingLarge...)
	}
	total := 0
	for _, c := range cfgs {
		t.Run(name(c), func(t *testing.T) {
			r := checkGood(t, c)
			total += r.States
			t.Logf("%d states, %d transitions, every property holds", r.States, r.Edges)
			if r.Violation != nil {
				t.Fatalf("%d states\n%s", r.States, r.Violation)
			}
		})
	}
	t.Logf("%d states explored in all", total)
}

// TestBadVariantsCaught substitutes each known-bad variant and requires
// the checker to find it, with the property each one breaks, in a
// configuration the correct protocol passes (so the counterexample is the
// variant's, not the configuration's).
func TestBadVariantsCaught(t *testing.T) {
	for _, tc := range []struct {
		name  string
		bug   Bug
		cfg   Config
		want  string
		steps []string // the mechanism: steps the counterexample must take
	}{
		{"hand-off without the waiter's slot check", BugNoSlotCheck,
			// The waiter enters on a record a judge found dead; the exact
			// unlink then leaves it owning without its record, the step
			// before a second owner (PropOwnBytes is checked first).
			Config{Procs: []Kind{Cohort, Cohort, TS}, Acquisitions: 2}, PropOwnBytes,
			[]string{"pwrite the waiter's bytes", "reclaim: judged dead", "slot lock on the captured inode", "granted: our exact bytes", "exact unlink of the judged snapshot"}},
		{"slot number reused by a later process", BugSlotReuse,
			Config{Procs: []Kind{Cohort, Cohort}, Acquisitions: 2, Crashes: 1, Restarts: 1}, PropStrand,
			[]string{"starts again as a new process", "slot lock on the captured inode", "[grant-pwrite] pwrite the waiter's bytes", "(then) [grant-done]"}},
		{"hand-off through a tombstone without the claim", BugTombstoneHandoff,
			Config{Procs: []Kind{Cohort, Cohort, TS}, Acquisitions: 2}, PropTombstone,
			[]string{"BAD: tombstone first"}},
		{"claim released before its sidecar tombstone is durable", BugRmdirBeforeDurableTomb,
			Config{Procs: []Kind{Cohort, Ref, TS}, Acquisitions: 1, Crashes: 1, PowerCut: true}, PropPowerCut,
			[]string{"sidecar tombstone (NOT fsynced)", "write-back of the claim directory", "POWER CUT"}},
		{"reference-path record in the sidecar before the claim directory is durable", BugRefTakeNoDirSync,
			Config{Procs: []Kind{Cohort, Ref, TS}, Acquisitions: 1, Crashes: 1, PowerCut: true}, PropPowerCut,
			[]string{"mkdir claim (not yet durable)", "our record into the sidecar", "write-back of the sidecar", "POWER CUT"}},
		{"waiter stuck in GRANTING when its granter dies", BugNoGrantRecovery,
			Config{Procs: []Kind{Cohort, Cohort, TS}, Acquisitions: 1, Crashes: 1, Restarts: 1}, PropStrand,
			[]string{"CAS a waiter WAITING->GRANTING", "CRASH"}},
		// A TypeScript reclaimer reads the hand-off's pwrite torn (a dead
		// pid), reads it again the same (the copy stalled) and its exact
		// unlink removes the inode before the copy ends; the owner grants
		// anyway and the waiter sits in GRANTED on bytes no name shows.
		{"hand-off without the owner's closing lstat", BugNoClosingCheck,
			Config{Procs: []Kind{Cohort, Cohort, TS}, Acquisitions: 1}, PropStrand,
			[]string{"the copy starts", "a torn read of a hand-off names a dead pid", "still the torn snapshot: deleted", "GRANTED"}},
		// The same torn read: the waiter, finding its bytes through its
		// descriptor, enters while the inode is detached (and, when the
		// reclaimer's copy stalled, deleted: TestEnterNoNameTwoOwners).
		{"waiter enters without checking that the name still names its inode", BugEnterNoName,
			Config{Procs: []Kind{Cohort, Cohort, TS}, Acquisitions: 1}, PropOwnBytes,
			[]string{"a torn read of a hand-off names a dead pid", "detaches it to its quarantine name", "BAD: granted: our exact bytes through our descriptor, the name not checked"}},
		// statelock's takeRecord today: the dead sidecar is unlinked and
		// created again; a SIGKILL between leaves a claim directory with
		// no sidecar, which no automatic rule removes (SPEC §4.3).
		{"dead sidecar replaced by unlink and create", BugSidecarUnlinkCreate,
			Config{Procs: []Kind{Cohort, Ref}, Acquisitions: 1, Crashes: 1, DeadSidecar: true}, PropStrand,
			[]string{"BAD: exact unlink of the dead sidecar", "CRASH"}},
		// §4.8.3's sticky time dropped: the kept record is let go only by
		// the process's next Lock, and the last Unlock keeps it too; a
		// waiter queued on it waits forever.
		{"sticky owner without an idle time", BugStickyNoIdle,
			Config{Procs: []Kind{Cohort, Cohort}, Acquisitions: 2, Crashes: 1, Restarts: 1}, PropStrand,
			[]string{"sticky: keep F.lock", "(then) [look] a live Go owner: queue as a waiter"}},
		// Nothing attests a kept record whose slot lock is dropped: a Go
		// judge finds it dead and unlinks it under the sticky owner.
		{"sticky owner without its slot lock", BugStickyDropsSlot,
			Config{Procs: []Kind{Cohort, Cohort, TS}, Acquisitions: 2}, PropOwnBytes,
			[]string{"BAD: sticky: keep F.lock, but drop the slot lock", "reclaim: judged dead", "exact unlink of the judged snapshot"}},
		// A yield that only a reference holder seen in F.lock ends: the
		// reference contender takes its turn (or dies, or is done) while
		// no Go process looks, and every Go taker then waits forever.
		{"yield to TypeScript without a window", BugYieldForever,
			Config{Procs: []Kind{Cohort, Cohort, TS}, Acquisitions: 2}, PropStrand,
			[]string{"yield the tombstone", "(then)"}},
		// r5-sticky's release today: the hand-off yields to a polling
		// TypeScript contender, then the release goes on to keep F.lock
		// (sticky), and the process's next Lock takes it back (or the
		// idle release hands it to a Go waiter): the yield gives the
		// contender nothing.
		{"yield followed by sticky ownership", BugYieldThenKeep,
			Config{Procs: []Kind{Cohort, Cohort, TS}, Acquisitions: 2}, PropYieldHonoured,
			[]string{"BAD: a TypeScript contender polls: yield; then keep F.lock", "BAD: sticky re-lock after the release yielded"}},
		{"claim directory removed before the sidecar is a tombstone", BugRefRmdirFirst,
			Config{Procs: []Kind{Cohort, Ref, TS}, Acquisitions: 2}, PropTSFailed,
			[]string{"BAD: release claim: rmdir first", "TS FATAL: T1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			good := checkGood(t, tc.cfg)
			if good.Violation != nil {
				t.Fatalf("the correct protocol fails this configuration:\n%s", good.Violation)
			}
			c := tc.cfg
			c.Bugs = tc.bug
			r, err := Check(c)
			if err != nil {
				t.Fatal(err)
			}
			if r.Violation == nil {
				t.Fatalf("%d states explored and the bad variant was not caught", r.States)
			}
			if r.Violation.Property != tc.want {
				t.Fatalf("caught, but as %q, want %q:\n%s", r.Violation.Property, tc.want, r.Violation)
			}
			trace := r.Violation.String()
			for _, st := range tc.steps {
				if !strings.Contains(trace, st) {
					t.Errorf("the counterexample does not take the step %q:\n%s", st, trace)
				}
			}
			t.Logf("correct protocol: %d states, all hold; bad variant caught after %d states:\n%s", good.States, r.States, r.Violation)
		})
	}
}

// TestNoSlotCheckTwoOwners: without the waiter's slot check the owner
// without its record (TestBadVariantsCaught) becomes two owners.
func TestNoSlotCheckTwoOwners(t *testing.T) {
	r, err := Check(Config{Procs: []Kind{Cohort, Cohort, TS}, Acquisitions: 2, Bugs: BugNoSlotCheck, noOwnBytes: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.Violation == nil || r.Violation.Property != PropMutex {
		t.Fatalf("want %q, got %v", PropMutex, r.Violation)
	}
	t.Logf("%d states:\n%s", r.States, r.Violation)
}

// TestEnterNoNameDeletedInode: a waiter that enters on its bytes without
// checking the name can enter an inode that a reclaimer's exact unlink
// deleted (its torn read was still what the stalled copy showed): it runs
// its critical section holding a lock nobody can see, which its release
// finds out only afterwards (meanwhile anyone may create F.lock).
func TestEnterNoNameDeletedInode(t *testing.T) {
	r, err := Check(Config{Procs: []Kind{Cohort, Cohort, TS}, Acquisitions: 1, Bugs: BugEnterNoName, noOwnBytes: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.Violation == nil || r.Violation.Property != PropGoRelease {
		t.Fatalf("want %q, got %v", PropGoRelease, r.Violation)
	}
	trace := r.Violation.String()
	for _, st := range []string{"still the torn snapshot: deleted", "BAD: granted", "[CRITICAL] leave critical section"} {
		if !strings.Contains(trace, st) {
			t.Errorf("the counterexample does not take the step %q:\n%s", st, trace)
		}
	}
	t.Logf("%d states:\n%s", r.States, r.Violation)
}

// TestRefTakeNoDirSyncFailsTypeScript: the take-side fsync's bad variant
// (TestBadVariantsCaught stops at the state after the cut) goes on, after
// the reboot, to a TypeScript operation that fails: its mkdir succeeds and
// it meets the Go record in the sidecar (T1). With the fsync (claimDurable)
// every TypeScript operation after every cut succeeds or waits for a Go
// process that heals, and that Go process finishes (TestProtocolHolds).
func TestRefTakeNoDirSyncFailsTypeScript(t *testing.T) {
	c := Config{Procs: []Kind{Cohort, Ref, TS}, Acquisitions: 1, Crashes: 1, PowerCut: true, noPowerCutProp: true}
	good, err := Check(c)
	if err != nil {
		t.Fatal(err)
	}
	if good.Violation != nil {
		t.Fatalf("the correct protocol fails:\n%s", good.Violation)
	}
	c.Bugs = BugRefTakeNoDirSync
	r, err := Check(c)
	if err != nil {
		t.Fatal(err)
	}
	if r.Violation == nil || r.Violation.Property != PropTSFailed {
		t.Fatalf("want %q, got %v", PropTSFailed, r.Violation)
	}
	trace := r.Violation.String()
	for _, st := range []string{"mkdir claim (not yet durable)", "our record into the sidecar", "write-back of the sidecar", "POWER CUT", "TS FATAL: T1"} {
		if !strings.Contains(trace, st) {
			t.Errorf("the counterexample does not take the step %q:\n%s", st, trace)
		}
	}
	t.Logf("correct protocol: %d states; bad variant:\n%s", good.States, r.Violation)
}

// TestDetachLossOnlyCostsLiveness: an owner whose closing lstat (§4.8.2d)
// takes a transient detach for a lost lock and cancels the grant breaks
// no property: its bytes are already in the inode, which the detacher
// puts back, and the waiter, back in WAITING, finds them at its next look
// (or withdraws, dropping the slot lock that made them alive). What it
// costs is the wake (and, in statelock, a release error for an operation
// that completed, if the owner reported one). The variant's step is taken,
// so the window is reached: an owner at its lstat while a peer's exact
// unlink has F.lock detached under a live claim.
func TestDetachLossOnlyCostsLiveness(t *testing.T) {
	c := Config{Procs: []Kind{Cohort, Cohort, TS}, Acquisitions: 1, Bugs: BugDetachLoss, Coverage: true}
	r, err := Check(c)
	if err != nil {
		t.Fatal(err)
	}
	if r.Violation != nil {
		t.Fatalf("concluding loss breaks a property after all:\n%s", r.Violation)
	}
	const bad = "go-cohort: BAD: lstat: F.lock is not our inode: the lock is lost, cancel the grant"
	if r.Taken[bad] == 0 {
		t.Fatalf("the variant's step %q is never taken: the transient detach is not reached", bad)
	}
	t.Logf("%d states, every property holds; the owner concluded loss on a transient detach in %d transitions", r.States, r.Taken[bad])
}

// TestConfigErrors: a configuration the model cannot represent is an
// error that says what is supported.
func TestConfigErrors(t *testing.T) {
	for _, c := range []Config{
		{},
		{Procs: []Kind{TS, TS, TS, TS, TS}, Acquisitions: 1},
		{Procs: []Kind{TS}, Acquisitions: 0},
	} {
		if _, err := Check(c); err == nil || !strings.Contains(err.Error(), "supported") {
			t.Errorf("Check(%+v) = %v, want an error naming what is supported", c, err)
		}
	}
}

// TestEveryStepReached: across the configurations of TestProtocolHolds,
// every step of every program is taken in some reachable state, except
// the ones only a bad variant or a failure takes. A step the exploration
// never reaches would be a step the properties never checked.
func TestEveryStepReached(t *testing.T) {
	reached := map[string]bool{}
	for _, c := range holding {
		for k := range checkGood(t, c).Reached {
			reached[k] = true
		}
	}
	for pc := uint8(0); pc < numPC; pc++ {
		if pc == gPwTomb || pc == gSideUnlink || pc == gSideCreate || pc == tFailed {
			continue // bad variants; a TypeScript failure
		}
		k := pcNames[pc] + "@" + kindOf(pc).String()
		if !reached[k] {
			t.Errorf("step %s is never reached", k)
		}
	}
	t.Logf("%d distinct steps reached", len(reached))
}

// TestTodaysClaimReleaseHole records what the model says of an exactfs
// from before §4.8.4 and claimDurable (kind Old; "today's" when this test
// was written) beside TypeScript across a power cut: its claim release
// rewrites the sidecar to a tombstone without an fsync before the rmdir,
// and its take writes its record into the sidecar without making the
// mkdir durable, so write-back can leave no claim directory and its record
// in the sidecar, and every later TypeScript call fails (T1) until a Go
// process heals the sidecar. The shortest trace found is the take's.
// statelock closes both (§4.8.4, the release's fsync, claimDurable); the
// cohort and reference-path configurations of TestProtocolHolds pass the
// same property.
func TestTodaysClaimReleaseHole(t *testing.T) {
	r, err := Check(Config{Procs: []Kind{Old, TS}, Acquisitions: 1, PowerCut: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.Violation == nil || r.Violation.Property != PropPowerCut {
		t.Fatalf("want %q, got %v", PropPowerCut, r.Violation)
	}
	t.Logf("%d states:\n%s", r.States, r.Violation)
}

// unreachedOutcomes are the outcomes the correct protocol never takes,
// each with the reason.
var unreachedOutcomes = map[string]string{
	"sidecar created (empty)":                        "runs start in the steady state, where the sidecar exists",
	"VIOLATION: our record changed while we held it": "a property violation",
	"sticky re-lock refused: F.lock is not our kept inode as we left it: forget it, acquire afresh": "no protocol step takes F.lock from a kept record (its slot lock and pid keep every judge off, and only its owner writes a live record in place); TestStickyProofRefusesTakenLock takes it",
}

// TestEveryOutcomeTaken: every outcome of every step (each emit in
// steps.go and check.go) is taken in some configuration of
// TestProtocolHolds, except those of the bad variants, the fatal cases and
// the ones unreachedOutcomes explains. An outcome never taken is a branch
// the properties never checked.
func TestEveryOutcomeTaken(t *testing.T) {
	taken := map[string]bool{}
	for _, c := range holding {
		for k := range checkGood(t, c).Taken {
			taken[k[strings.Index(k, ": ")+2:]] = true
		}
	}
	lit := regexp.MustCompile(`emit\(&ns2?, (?:i, )?"([^"]*)"`)
	n := 0
	for _, f := range []string{"steps.go", "check.go"} {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range lit.FindAllStringSubmatch(string(src), -1) {
			what := m[1]
			n++
			if strings.HasPrefix(what, "BAD") || unreachedOutcomes[what] != "" {
				if taken[what] {
					t.Errorf("outcome %q is taken by the correct protocol, but is listed as never taken", what)
				}
				continue
			}
			if !taken[what] {
				t.Errorf("outcome %q is never taken", what)
			}
		}
	}
	if n < 60 {
		t.Fatalf("found only %d outcomes in the sources; the pattern no longer matches the emit calls", n)
	}
	t.Logf("%d outcomes in the sources, %d taken", n, len(taken))
}

// TestStickyProofRefusesTakenLock: the sticky re-lock's proof (an lstat
// that F.lock still names the kept inode) is what keeps a re-lock off a
// lock a peer took. In the protocol no peer can take a kept record (its
// slot lock and pid attest it: the refusal is in unreachedOutcomes, and
// BugStickyNoProof alone breaks nothing, TestStickyNoProofAlone), so a
// known-bad variant supplies the taker: the sticky owner drops its slot
// lock (BugStickyDropsSlot), a Go judge finds the kept record dead and
// unlinks it, and the peer creates F.lock again. A sticky owner is not
// counted as an owner here (else that is the violation found first). With
// the proof, the re-lock is refused (and the idle release then finds its
// record gone); without it (BugStickyNoProof), the re-lock proceeds.
func TestStickyProofRefusesTakenLock(t *testing.T) {
	c := Config{Procs: []Kind{Cohort, Cohort}, Acquisitions: 2, Bugs: BugStickyDropsSlot,
		noOwnBytes: true, stickyNotOwner: true, Coverage: true}
	r, err := Check(c)
	if err != nil {
		t.Fatal(err)
	}
	if r.Violation != nil && r.Violation.Property == PropStickyRelock {
		t.Fatalf("with the proof, a re-lock proceeded on a taken lock:\n%s", r.Violation)
	}
	const refused = "go-cohort: sticky re-lock refused: F.lock is not our kept inode as we left it: forget it, acquire afresh"
	if r.Taken[refused] == 0 {
		t.Fatalf("the proof never refused a re-lock: the taken lock is not reached")
	}
	c.Bugs |= BugStickyNoProof
	c.Coverage = false
	r, err = Check(c)
	if err != nil {
		t.Fatal(err)
	}
	if r.Violation == nil || r.Violation.Property != PropStickyRelock {
		t.Fatalf("want %q, got %v", PropStickyRelock, r.Violation)
	}
	trace := r.Violation.String()
	for _, st := range []string{"BAD: sticky: keep F.lock, but drop the slot lock", "reclaim: judged dead", "exact unlink of the judged snapshot", "BAD: sticky re-lock without the proof"} {
		if !strings.Contains(trace, st) {
			t.Errorf("the counterexample does not take the step %q:\n%s", st, trace)
		}
	}
	t.Logf("%d states:\n%s", r.States, r.Violation)
}

// TestStickyNoProofAlone: without the proof, but with the kept record
// attested (slot lock held, pid alive), no property breaks: no peer's step
// takes F.lock from a live kept record, a crash ends the stickiness with
// the process, and a restarted process keeps nothing. The proof guards
// against what the model leaves out (a person or a program outside the
// protocol that removes or replaces F.lock; another host), and, in
// statelock, against a kept record the release took meanwhile. The bad
// step is taken, so the window is reached.
func TestStickyNoProofAlone(t *testing.T) {
	for _, c := range []Config{
		{Procs: []Kind{Cohort, Cohort}, Acquisitions: 2, Crashes: 1, Restarts: 1},
		{Procs: []Kind{Cohort, TS}, Acquisitions: 3, Crashes: 1, Restarts: 1},
	} {
		c.Bugs, c.Coverage = BugStickyNoProof, true
		r, err := Check(c)
		if err != nil {
			t.Fatal(err)
		}
		if r.Violation != nil {
			t.Fatalf("%s: a re-lock without the proof breaks a property after all:\n%s", name(c), r.Violation)
		}
		const bad = "go-cohort: BAD: sticky re-lock without the proof"
		if r.Taken[bad] == 0 {
			t.Fatalf("%s: the variant's step is never taken", name(c))
		}
		t.Logf("%s: %d states, every property holds; %d re-locks without the proof", name(c), r.States, r.Taken[bad])
	}
}

// TestStickyIgnoresClaimOnlyCostsFairness: a sticky owner that keeps
// F.lock and re-locks while a claim directory exists breaks no safety
// property and strands no Go process: the reference contender behind the
// claim sees a live owner and retries. What it costs is the contender's
// turn, a fairness property the model does not check (see the package
// doc, "What is abstracted away": TypeScript's progress rests on the
// timing of the sticky time, the yield window and its backoff). The bad
// step is taken, so a claim directory beside a sticky owner is reached.
func TestStickyIgnoresClaimOnlyCostsFairness(t *testing.T) {
	c := Config{Procs: []Kind{Cohort, TS}, Acquisitions: 3, Crashes: 1, Restarts: 1, Bugs: BugStickyIgnoresClaim, Coverage: true}
	r, err := Check(c)
	if err != nil {
		t.Fatal(err)
	}
	if r.Violation != nil {
		t.Fatalf("ignoring the claim breaks a property after all:\n%s", r.Violation)
	}
	const bad = "go-cohort: BAD: sticky re-lock while a claim directory exists"
	if r.Taken[bad] == 0 {
		t.Fatalf("the variant's step is never taken: no claim directory beside a sticky owner")
	}
	t.Logf("%d states, every property holds; %d re-locks beside a claim directory", r.States, r.Taken[bad])
}
