package model

import (
	"fmt"
	"strings"
)

// Bug switches on one known-bad variant of the protocol. The checker must
// find each (the tests hold it to the property each one breaks).
type Bug uint32

const (
	// BugNoSlotCheck: the owner grants without checking that the waiter's
	// slot lock is held on F.lock's current inode (§4.8.2 b dropped).
	BugNoSlotCheck Bug = 1 << iota
	// BugSlotReuse: slot numbers by process position, so a later process
	// reuses a dead one's number (the prototype's first version).
	BugSlotReuse
	// BugTombstoneHandoff: the hand-off releases to a tombstone and then
	// writes the waiter's record, without the claim.
	BugTombstoneHandoff
	// BugRmdirBeforeDurableTomb: a reference-path Go claim is released by
	// rmdir before its sidecar tombstone is durable (no fsync; what
	// statelock's releaseClaim does today, see claim.go).
	BugRmdirBeforeDurableTomb
	// BugRefTakeNoDirSync: a reference-path Go taker writes its record into
	// the sidecar before the claim directory it made is durable.
	BugRefTakeNoDirSync
	// BugRefRmdirFirst: a reference-path Go claim is released by rmdir
	// and only then is its sidecar rewritten to a tombstone.
	BugRefRmdirFirst
	// BugNoGrantRecovery: a waiter left in GRANTING by a granter that died
	// before its pwrite keeps waiting for the grant (the prototype's gap).
	BugNoGrantRecovery
	// BugDetachLoss: the owner's closing lstat (§4.8.2d) takes a name
	// that does not name its inode as the lock lost and cancels the
	// grant at once, instead of looking again while a peer's exact
	// unlink has it detached under the claim.
	BugDetachLoss
	// BugNoClosingCheck: the owner stores GRANTED without its closing
	// lstat (§4.8.2d), also when its inode is no longer F.lock.
	BugNoClosingCheck
	// BugEnterNoName: the waiter enters on its bytes through its
	// descriptor without checking that F.lock still names that inode.
	BugEnterNoName
	// BugStickyNoProof: a sticky owner's re-lock proceeds on the kept
	// record in memory, without the lstat that F.lock still names it.
	BugStickyNoProof
	// BugStickyIgnoresClaim: a sticky owner keeps F.lock, and re-locks,
	// while a claim directory exists (a reference contender polls).
	BugStickyIgnoresClaim
	// BugStickyNoIdle: no sticky time: the kept record is let go only by
	// the process's next Lock, and a process keeps it at its last Unlock
	// too (it cannot know it is the last).
	BugStickyNoIdle
	// BugStickyDropsSlot: a sticky owner drops its slot lock while it
	// keeps F.lock (and takes it again at the re-lock): nothing attests
	// the kept record.
	BugStickyDropsSlot
	// BugYieldForever: the yield to a reference contender ends only when
	// a reference holder's record is seen in F.lock (no window).
	BugYieldForever
	// BugYieldThenKeep: a release whose hand-off yields to a reference
	// contender goes on as if no waiter had been served: it may keep
	// F.lock (sticky) and re-lock it, or, let go later, hand it to a Go
	// waiter (r5-sticky's release: handoff, then stick).
	BugYieldThenKeep
	// BugSidecarUnlinkCreate: a Go taker that meets a dead record (not a
	// tombstone) in the sidecar under its fresh claim removes it by exact
	// unlink and creates the sidecar again (statelock's takeRecord full
	// path today), instead of rewriting it in place.
	BugSidecarUnlinkCreate
)

// Config is one finite configuration to explore.
type Config struct {
	Procs        []Kind
	Acquisitions int  // critical sections each process runs
	Crashes      int  // crashes (SIGKILL) allowed in one run, at any step
	Restarts     int  // crashed processes that may come back as new processes
	PowerCut     bool // model write-back and allow one power cut ("crash all")
	Bugs         Bug
	MaxStates    int  // give up beyond this many states (0: 20 million)
	Coverage     bool // count the outcomes taken (Result.Taken)
	// DeadSidecar starts with the sidecar holding the record of a process
	// that is gone, and no claim directory: what a power cut can leave
	// when the reference's own mkdir was not durable (see reboot), or an
	// older exactfs's release.
	DeadSidecar bool

	// noOwnBytes leaves PropOwnBytes out (a test shows that what it
	// catches first goes on to two owners).
	noOwnBytes bool
	// noPowerCutProp leaves PropPowerCut out (a test shows the TypeScript
	// operation that then fails after the reboot).
	noPowerCutProp bool
	// stickyNotOwner does not count a sticky owner (kept, between
	// critical sections) as an owner (a test shows what the re-lock's
	// proof refuses when something takes F.lock from a kept record).
	stickyNotOwner bool
}

// Properties the checker reports.
const (
	PropMutex         = "mutual exclusion: two owners in their critical sections"
	PropTombstone     = "a tombstone in F.lock during a Go-to-Go hand-off"
	PropTSFailed      = "a TypeScript operation failed (seed's fatal case reached)"
	PropGoRelease     = "a Go owner's record was changed by someone else while held"
	PropPowerCut      = "after a power cut: no claim directory, sidecar a Go record (T1 for every TypeScript call)"
	PropStrand        = "a strand: the live Go processes can no longer all finish"
	PropOwnBytes      = "an owner in its critical section while F.lock does not hold exactly its record"
	PropPutBack       = "an exact unlink could not put a detached F.lock back: its name was taken"
	PropYieldHonoured = "a release that yielded the tombstone to a reference contender handed F.lock to a Go process (a grant or a re-lock)"
	PropStickyRelock  = "a sticky owner's re-lock proceeded while F.lock no longer named and held its kept record"
)

// Model is a configured checker.
type Model struct{ cfg Config }

// Step is one step of a counterexample.
type Step struct {
	Proc  int // -1: the kernel (write-back, power cut)
	What  string
	State string
}

// Violation is a property broken, with the path that breaks it.
type Violation struct {
	Property string
	Detail   string
	Trace    []Step
}

func (v *Violation) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "VIOLATED: %s\n%s\ntrace (%d steps):\n", v.Property, v.Detail, len(v.Trace)-1)
	for i, st := range v.Trace {
		if i == 0 {
			fmt.Fprintf(&b, "  %3d  initial\n      %s\n", i, st.State)
			continue
		}
		who := "kernel"
		if st.Proc >= 0 {
			who = fmt.Sprintf("P%d", st.Proc)
		}
		fmt.Fprintf(&b, "  %3d  %s: %s\n      %s\n", i, who, st.What, st.State)
	}
	return b.String()
}

// Result is what one exploration found.
type Result struct {
	States   int // distinct reachable states
	Edges    int // transitions explored
	Stranded int // reachable states from which the live Go processes cannot all finish
	// Reached names every step some live process was about to take in
	// some reachable state (a step never reached is a step never checked).
	Reached map[string]bool
	// Taken counts, per "kind: outcome", the transitions taken (with
	// Config.Coverage): every branch of every step, not only every step.
	Taken     map[string]int
	Violation *Violation
}

func (m *Model) initial() State {
	var s State
	s.lock = 1
	s.ino[1] = inode{c: rec{k: kTomb}, ver: 1}
	s.side = rec{k: kTomb}
	s.sideVer = 1
	if m.cfg.DeadSidecar {
		s.side = rec{k: kLive, who: 0, inc: 0} // P0.0 never runs: processes start at incarnation 1
	}
	s.durSide = s.side
	for i, k := range m.cfg.Procs {
		if m.cfg.DeadSidecar {
			s.p[i].inc = 1
		}
		if k == TS {
			s.p[i].pc, s.p[i].after = tMkdir, tAcq
		} else {
			s.p[i].pc = gLook
		}
	}
	return s
}

func (m *Model) finished(s *State, i int) bool {
	p := &s.p[i]
	return p.dead || p.fail || p.pc == gFin || p.pc == tFin || p.pc == tFailed
}

// successors emits every next state of s. live marks the steps of live
// processes and the kernel's write-back (the steps the liveness property
// may use); crashes, restarts and the power cut are the environment's.
func (m *Model) successors(s *State, emit func(ns *State, proc int, what string, live bool)) {
	out := emit
	emit = func(ns *State, proc int, what string, live bool) {
		m.canon(ns)
		out(ns, proc, what, live)
	}
	for i := range m.cfg.Procs {
		if m.finished(s, i) {
			continue
		}
		m.stepProc(s, i, func(ns *State, what string) {
			m.canon(ns)
			if *ns != *s {
				emit(ns, i, what, true)
			}
		})
	}
	for i := range m.cfg.Procs {
		m.giveUp(s, i, func(ns *State, what string) { emit(ns, i, what, false) })
	}
	if m.cfg.PowerCut && !s.cut {
		if s.durSide != s.side {
			ns := *s
			ns.durSide = s.side
			emit(&ns, -1, "write-back of the sidecar", true)
		}
		if s.durDir != (s.dir != 0) {
			ns := *s
			ns.durDir = s.dir != 0
			emit(&ns, -1, "write-back of the claim directory's creation/removal", true)
		}
		ns := m.reboot(s)
		emit(&ns, -1, "POWER CUT: every process dies; the disk keeps what was written back; reboot", false)
	}
	if s.yield && m.cfg.Bugs&BugYieldForever == 0 {
		// The yield window runs out (referenceYield): time passes, a
		// step the Go side may count on.
		ns := *s
		ns.yield = false
		emit(&ns, -1, "the yield window runs out", true)
	}
	if int(s.crashes) < m.cfg.Crashes {
		for i := range m.cfg.Procs {
			if m.finished(s, i) {
				continue
			}
			ns := *s
			ns.crashes++
			q := &ns.p[i]
			if q.pc == gPwEnd {
				// A SIGKILL does not split a pwrite of one page: the
				// copy that started ends.
				write(&ns, q.hIno, q.gRec)
			}
			q.dead = true
			q.slotI, q.sideL = 0, false
			q.noSt, q.once, q.retry, q.yld = false, false, false, false
			q.ino, q.ver, q.hIno, q.hVer, q.sSnap, q.dSnap, q.tgt, q.after, q.next = 0, 0, 0, 0, 0, 0, 0, 0, 0
			q.gRec = rec{}
			emit(&ns, i, "CRASH (SIGKILL: the kernel drops its locks, its pid is dead)", false)
		}
	}
	if int(s.restart) < m.cfg.Restarts {
		for i := range m.cfg.Procs {
			p := &s.p[i]
			if !p.dead || p.fail {
				continue
			}
			ns := *s
			ns.restart++
			np := proc{inc: p.inc + 1, done: p.done}
			if m.cfg.Procs[i] == TS {
				np.pc, np.after = tMkdir, tAcq
			} else {
				np.pc = gLook
			}
			ns.p[i] = np
			emit(&ns, i, "starts again as a new process (a new pid and slot)", false)
		}
	}
}

// reboot is the world after a power cut in s: the claim directory and the
// sidecar as written back (a claim directory left is one made before this
// boot, which every exactfs judge may remove: claim.go inspectClaim);
// F.lock as it was (whatever it holds is dead after a reboot: its pids and
// slot locks are gone; a record torn mid-copy is malformed); no kernel
// locks, no mailbox. Then one Go process (the first) and one TypeScript
// process (the first) start again, each for one more acquisition, and no
// crash or second cut follows: every TypeScript operation after the reboot
// must succeed or wait for a Go process that heals what it meets, and the
// Go process must finish (the liveness check).
func (m *Model) reboot(s *State) State {
	ns := *s
	ns.cut, ns.crashes, ns.restart = true, uint8(m.cfg.Crashes), uint8(m.cfg.Restarts)
	ns.cutT1 = !s.durDir && (s.durSide.k == kLive || s.durSide.k == kTorn) && m.cfg.Procs[s.durSide.who] != TS
	ns.dir, ns.maker, ns.makerInc, ns.oldDir = 0, 0, 0, false
	if s.durDir {
		ns.dir, ns.oldDir = 1, true
	}
	ns.side, ns.sideVer = s.durSide, fresh
	ns.yield = false // the mailbox's yield is a deadline of the boot that ended
	ns.durSide, ns.durDir = rec{}, false
	if ns.lock != 0 && ns.ino[ns.lock].c.k == kMix {
		ns.ino[ns.lock].c = rec{k: kTorn, who: ns.ino[ns.lock].c.who}
	}
	goUp, tsUp := false, false
	for i, k := range m.cfg.Procs {
		p := &ns.p[i]
		up := false
		switch {
		case k == TS && !tsUp:
			up, tsUp = true, true
		case (k == Cohort || k == Ref) && !goUp:
			up, goUp = true, true
		}
		if !up {
			*p = proc{dead: true, inc: p.inc, done: p.done}
			continue
		}
		*p = proc{inc: p.inc + 1, done: uint8(m.cfg.Acquisitions - 1)}
		if k == TS {
			p.pc, p.after = tMkdir, tAcq
		} else {
			p.pc = gLook
		}
	}
	return ns
}

// violated returns the safety property s breaks, if any.
func (m *Model) violated(s *State) (prop, detail string) {
	if s.badRelock {
		return PropStickyRelock, fmt.Sprintf("F.lock is %s", m.lockString(s))
	}
	if s.yieldBroken {
		return PropYieldHonoured, fmt.Sprintf("F.lock is %s", m.lockString(s))
	}
	owners := []string{}
	for i := range m.cfg.Procs {
		p := &s.p[i]
		if p.dead {
			continue
		}
		if p.pc == gCS || p.pc == tCS || (p.pc == gSticky && !m.cfg.stickyNotOwner) {
			owners = append(owners, fmt.Sprintf("P%d", i))
			if !m.cfg.noOwnBytes && (s.lock == 0 || s.lock != p.hIno || s.ino[s.lock].c != m.myRec(s, i)) {
				return PropOwnBytes, fmt.Sprintf("P%d owns, and F.lock is %s", i, m.lockString(s))
			}
		}
		if p.fail {
			if m.cfg.Procs[i] == TS {
				return PropTSFailed, fmt.Sprintf("P%d (TypeScript) failed", i)
			}
			return PropGoRelease, fmt.Sprintf("P%d found its record changed", i)
		}
		switch p.pc {
		case gCheck, gPwTomb, gPwrite:
			if s.lock == p.hIno && s.ino[p.hIno].c.k == kTomb {
				return PropTombstone, fmt.Sprintf("P%d is handing F.lock to P%d and F.lock is a tombstone", i, p.tgt-1)
			}
		}
	}
	if s.lost {
		return PropPutBack, "a live record stays detached under a quarantine name"
	}
	if len(owners) > 1 {
		return PropMutex, "owners at once: " + strings.Join(owners, ", ")
	}
	if s.cutT1 && !m.cfg.noPowerCutProp {
		return PropPowerCut, "after the cut the disk has no claim directory and the sidecar holds " + s.side.String()
	}
	return "", ""
}

// Check explores every interleaving of cfg from the steady state (F.lock
// and the sidecar tombstones, no claim) breadth first, stopping at the
// first safety violation, then checks that no reachable state strands the
// live Go processes.
func Check(cfg Config) (*Result, error) {
	if len(cfg.Procs) == 0 || len(cfg.Procs) > maxP {
		return nil, fmt.Errorf("model: %d processes; between 1 and %d are supported", len(cfg.Procs), maxP)
	}
	if cfg.Acquisitions < 1 || cfg.Acquisitions > 8 {
		return nil, fmt.Errorf("model: %d acquisitions per process; between 1 and 8 are supported", cfg.Acquisitions)
	}
	if cfg.MaxStates == 0 {
		cfg.MaxStates = 20_000_000
	}
	m := &Model{cfg: cfg}
	init := m.initial()
	states := &store{}
	states.add(&init)
	index := newStateSet()
	index.add(states, 0)
	parent := []int32{-1}
	// live successors in CSR form (for the liveness check)
	succStart := []int32{}
	succ := []int32{}
	res := &Result{Reached: map[string]bool{}, Taken: map[string]int{}}
	var reached [numPC]bool
	defer func() {
		for pc, ok := range reached {
			if ok {
				res.Reached[pcNames[pc]+"@"+kindOf(uint8(pc)).String()] = true
			}
		}
	}()
	for id := 0; id < states.len(); id++ {
		s := *states.at(int32(id))
		for i := range cfg.Procs {
			if !s.p[i].dead {
				reached[s.p[i].pc] = true
			}
		}
		succStart = append(succStart, int32(len(succ)))
		var stop *State
		m.successors(&s, func(ns *State, proc int, what string, live bool) {
			res.Edges++
			if cfg.Coverage {
				k := "kernel"
				if proc >= 0 {
					k = kindOf(s.p[proc].pc).String()
				}
				res.Taken[k+": "+what]++
			}
			if stop != nil {
				return
			}
			nid := index.find(states, ns)
			if nid < 0 {
				nid = states.add(ns)
				index.add(states, nid)
				parent = append(parent, int32(id))
				if prop, _ := m.violated(ns); prop != "" {
					c := *ns
					stop = &c
				}
			}
			if live {
				succ = append(succ, nid)
			}
		})
		if stop != nil {
			prop, detail := m.violated(stop)
			res.States = states.len()
			res.Violation = &Violation{Property: prop, Detail: detail, Trace: m.trace(states, parent, index.find(states, stop))}
			return res, nil
		}
		if states.len() > cfg.MaxStates {
			return nil, fmt.Errorf("model: more than %d states; use a smaller configuration", cfg.MaxStates)
		}
	}
	succStart = append(succStart, int32(len(succ)))
	res.States = states.len()

	// Liveness: backwards from the states where every live Go process has
	// finished, over live steps only.
	n := states.len()
	indeg := make([]int32, n+1)
	for _, t := range succ {
		indeg[t+1]++
	}
	for i := 1; i <= n; i++ {
		indeg[i] += indeg[i-1]
	}
	pred := make([]int32, len(succ))
	fill := append([]int32(nil), indeg[:n]...)
	for from := 0; from < n; from++ {
		for _, t := range succ[succStart[from]:succStart[from+1]] {
			pred[fill[t]] = int32(from)
			fill[t]++
		}
	}
	reach := func(target func(*State) bool) []bool {
		good := make([]bool, n)
		queue := []int32{}
		for i := 0; i < n; i++ {
			if target(states.at(int32(i))) {
				good[i] = true
				queue = append(queue, int32(i))
			}
		}
		for len(queue) > 0 {
			t := queue[len(queue)-1]
			queue = queue[:len(queue)-1]
			for _, f := range pred[indeg[t]:indeg[t+1]] {
				if !good[f] {
					good[f] = true
					queue = append(queue, f)
				}
			}
		}
		return good
	}
	good := reach(m.goDone)
	first := -1
	for i := range good {
		if !good[i] {
			res.Stranded++
			if first < 0 {
				first = i
			}
		}
	}
	if first >= 0 {
		tr := m.trace(states, parent, int32(first))
		// Then one way it goes on (every way strands): live steps until
		// none is left or a state repeats.
		walk := []int32{int32(first)}
		seen := map[int32]bool{int32(first): true}
		for len(walk) < 40 {
			cur := walk[len(walk)-1]
			next := int32(-1)
			for _, t := range succ[succStart[cur]:succStart[cur+1]] {
				if !seen[t] {
					next = t
					break
				}
			}
			if next < 0 {
				break
			}
			seen[next] = true
			walk = append(walk, next)
		}
		for _, st := range m.steps(states, walk)[1:] {
			st.What = "(then) " + st.What
			tr = append(tr, st)
		}
		res.Violation = &Violation{Property: PropStrand,
			Detail: fmt.Sprintf("%d reachable states strand the Go side. From step %d on, no steps of the live processes let every live Go process finish; the steps marked (then) show one way it goes on, until nothing new can happen", res.Stranded, len(tr)-len(walk)),
			Trace:  tr}
	}
	return res, nil
}

// goDone: every Go process that is alive has finished.
func (m *Model) goDone(s *State) bool {
	for i, k := range m.cfg.Procs {
		if k == TS {
			continue
		}
		p := &s.p[i]
		if !p.dead && p.pc != gFin {
			return false
		}
	}
	return true
}

func (m *Model) trace(states *store, parent []int32, id int32) []Step {
	ids := []int32{}
	for x := id; x >= 0; x = parent[x] {
		ids = append([]int32{x}, ids...)
	}
	return m.steps(states, ids)
}

// steps renders the path ids (consecutive states), naming each step.
func (m *Model) steps(states *store, ids []int32) []Step {
	out := []Step{{Proc: -1, State: m.render(states.at(ids[0]))}}
	for k := 1; k < len(ids); k++ {
		from, to := *states.at(ids[k-1]), *states.at(ids[k])
		st := Step{Proc: -1, What: "?"}
		m.successors(&from, func(ns *State, proc int, what string, _ bool) {
			if *ns == to && st.What == "?" {
				pc := ""
				if proc >= 0 {
					pc = "[" + pcNames[from.p[proc].pc] + "] "
				}
				st = Step{Proc: proc, What: pc + what}
			}
		})
		st.State = m.render(&to)
		out = append(out, st)
	}
	return out
}

// kindOf says whose program a program counter belongs to (Cohort standing
// for both Go kinds).
func kindOf(pc uint8) Kind {
	if pc >= tMkdir {
		return TS
	}
	return Cohort
}
