package liveness

import (
	"strings"
	"syscall"
	"testing"
)

// fakeProbe answers every probe from its fields and records the calls.
type fakeProbe struct {
	signal    error
	zombie    bool
	zombieErr error
	start     string
	startErr  error
	ino       uint64
	inoErr    error
	boot      string
	bootErr   error
	ns        uint64
	nsErr     error
	ct        uint64
	ctErr     error
	nested    bool
	nestedErr error
	calls     []string
}

func (f *fakeProbe) Signal(pid int) error {
	f.calls = append(f.calls, "signal")
	return f.signal
}
func (f *fakeProbe) Zombie(int) (bool, error) {
	f.calls = append(f.calls, "zombie")
	return f.zombie, f.zombieErr
}
func (f *fakeProbe) StartTime(_ int, format string) (string, error) {
	f.calls = append(f.calls, "start:"+format)
	return f.start, f.startErr
}
func (f *fakeProbe) PidfdIno(int) (uint64, error) {
	f.calls = append(f.calls, "pidfd")
	return f.ino, f.inoErr
}
func (f *fakeProbe) BootID() (string, error) {
	f.calls = append(f.calls, "boot")
	return f.boot, f.bootErr
}
func (f *fakeProbe) PidNS() (uint64, error) {
	f.calls = append(f.calls, "pidns")
	return f.ns, f.nsErr
}

func (f *fakeProbe) CreateTime(int) (uint64, error) {
	f.calls = append(f.calls, "create")
	return f.ct, f.ctErr
}

func (f *fakeProbe) Nested(int, string) (bool, error) {
	f.calls = append(f.calls, "nested")
	return f.nested, f.nestedErr
}

func (f *fakeProbe) called(name string) bool {
	for _, c := range f.calls {
		if c == name || strings.HasPrefix(c, name+":") {
			return true
		}
	}
	return false
}

const (
	hostA   = "host-a"
	legacyA = "legacy-a"
)

// liveProbe describes a live process 42 with start time 100 (linux format),
// pidfd inode 7, in boot "boot-1" and pid namespace 9.
func liveProbe() *fakeProbe {
	return &fakeProbe{start: "100", ino: 7, boot: "boot-1", ns: 9}
}

func liveOwner() Owner {
	return Owner{Pid: 42, StartTime: "100", StartTimeFormat: FormatLinuxProc, HostID: hostA,
		BootID: "boot-1", PidfdIno: 7, PidNS: 9}
}

func TestJudgeRules(t *testing.T) {
	esrch := func(p *fakeProbe) { p.signal = syscall.ESRCH }
	noNS := func(o *Owner) { o.PidNS = 0 }
	for _, tc := range []struct {
		name      string
		hostLocal bool
		owner     func(*Owner)
		probe     func(*fakeProbe)
		want      Verdict
		reason    string
		notCalled []string
	}{
		{name: "live owner", want: Alive, reason: "pidfd inode and boot match", notCalled: []string{"start"}},
		{name: "live owner without pidfd", owner: func(o *Owner) { o.PidfdIno = 0 }, want: Alive, reason: "start time matches"},
		{name: "live owner without boot id", owner: func(o *Owner) { o.BootID = "" }, want: Alive, reason: "start time matches"},
		{name: "no host id", owner: func(o *Owner) { o.HostID = "" }, probe: esrch, want: Alive,
			reason: "no host id", notCalled: []string{"signal", "boot", "pidns"}},
		{name: "no host id, host-local, dead pid", hostLocal: true, owner: func(o *Owner) { o.HostID = "" },
			probe: esrch, want: Dead, reason: "ESRCH"},
		{name: "no host id, host-local, live pid", hostLocal: true, owner: func(o *Owner) { o.HostID = "" },
			want: Alive},
		{name: "foreign host, dead pid", owner: func(o *Owner) { o.HostID = "host-b" }, probe: esrch,
			want: Alive, reason: "foreign host", notCalled: []string{"signal", "boot", "pidns"}},
		{name: "foreign host, other boot", owner: func(o *Owner) { o.HostID = "host-b"; o.BootID = "boot-0" },
			want: Alive, reason: "foreign host"},
		{name: "HostLocal does not make a foreign host local", hostLocal: true,
			owner: func(o *Owner) { o.HostID = "host-b" }, probe: esrch, want: Alive, reason: "foreign host"},
		{name: "legacy host id, dead pid", owner: func(o *Owner) { o.HostID = legacyA }, probe: esrch,
			want: Dead, reason: "ESRCH"},
		{name: "pid 0", owner: func(o *Owner) { o.Pid = 0 }, want: Unknown, notCalled: []string{"signal"}},
		{name: "pid -1", owner: func(o *Owner) { o.Pid = -1 }, want: Unknown, notCalled: []string{"signal"}},
		{name: "pid beyond pid_t", owner: func(o *Owner) { o.Pid = append(beyondPidT(), -7)[0] }, want: Unknown,
			notCalled: []string{"signal"}},
		{name: "ESRCH", probe: esrch, want: Dead, reason: "no such process (ESRCH)"},
		{name: "EPERM", probe: func(p *fakeProbe) { p.signal = syscall.EPERM }, want: Alive, reason: "EPERM"},
		{name: "EPERM, state unreadable", probe: func(p *fakeProbe) {
			p.signal, p.zombieErr, p.inoErr, p.startErr = syscall.EPERM, syscall.EACCES, syscall.ESRCH, syscall.EACCES
			p.ino, p.start = 0, ""
		}, want: Alive, reason: "EPERM"},
		{name: "EPERM, zombie", probe: func(p *fakeProbe) { p.signal = syscall.EPERM; p.zombie = true }, want: Dead, reason: "zombie"},
		{name: "EPERM, pid reused by another user", probe: func(p *fakeProbe) { p.signal = syscall.EPERM; p.start = "101"; p.ino = 8 },
			want: Dead, reason: "pid reused"},
		{name: "EIO", probe: func(p *fakeProbe) { p.signal = syscall.EIO }, want: Unknown,
			notCalled: []string{"zombie", "start"}},
		{name: "wrapped ESRCH", probe: func(p *fakeProbe) { p.signal = &fakeSyscallErr{syscall.ESRCH} }, want: Dead},
		{name: "zombie", probe: func(p *fakeProbe) { p.zombie = true }, want: Dead, reason: "zombie"},
		{name: "zombie state unreadable", probe: func(p *fakeProbe) { p.zombieErr = syscall.EACCES }, want: Alive},
		{name: "other boot", probe: func(p *fakeProbe) { p.boot = "boot-2"; p.signal = syscall.EIO }, want: Dead,
			reason: "boot differs", notCalled: []string{"signal"}},
		{name: "boot unreadable", probe: func(p *fakeProbe) { p.boot = ""; p.bootErr = syscall.ENOENT }, want: Alive},
		{name: "record without boot", owner: func(o *Owner) { o.BootID = "" }, probe: func(p *fakeProbe) { p.boot = "boot-2" },
			want: Alive, notCalled: []string{"boot"}},
		{name: "other pid namespace, ESRCH here", probe: func(p *fakeProbe) { p.ns = 10; p.signal = syscall.ESRCH },
			want: Unknown, reason: "other pid namespace", notCalled: []string{"signal"}},
		{name: "pid namespace unreadable", probe: func(p *fakeProbe) { p.ns = 0; p.nsErr = syscall.EACCES; p.signal = syscall.ESRCH },
			want: Unknown, notCalled: []string{"signal"}},
		{name: "record without pid namespace", owner: func(o *Owner) { o.PidNS = 0 },
			probe: func(p *fakeProbe) { p.ns = 10 }, want: Alive, notCalled: []string{"pidns"}},
		{name: "pidfd inode differs, same start time", probe: func(p *fakeProbe) { p.ino = 8 }, want: Dead,
			reason: "pidfd inode differs"},
		{name: "pidfd ESRCH contradicting kill", probe: func(p *fakeProbe) { p.ino = 0; p.inoErr = syscall.ESRCH }, want: Alive},
		{name: "pidfd unsupported here", probe: func(p *fakeProbe) { p.ino = 0 }, want: Alive},
		{name: "pidfd error", probe: func(p *fakeProbe) { p.ino = 0; p.inoErr = syscall.EMFILE }, want: Alive},
		{name: "pidfd and boot equal, start time differs (time namespace)", probe: func(p *fakeProbe) { p.start = "101" },
			want: Alive, reason: "pidfd inode and boot match"},
		{name: "pidfd equal without boot id, start time differs", owner: func(o *Owner) { o.BootID = "" },
			probe: func(p *fakeProbe) { p.start = "101" }, want: Dead, reason: "start time differs"},
		{name: "pidfd equal, boot unreadable, start time differs", probe: func(p *fakeProbe) { p.start = "101"; p.boot = ""; p.bootErr = syscall.EACCES },
			want: Dead, reason: "start time differs"},
		{name: "record without pidfd", owner: func(o *Owner) { o.PidfdIno = 0 }, probe: func(p *fakeProbe) { p.ino = 8 },
			want: Alive, notCalled: []string{"pidfd"}},
		{name: "start time differs", owner: func(o *Owner) { o.PidfdIno = 0 }, probe: func(p *fakeProbe) { p.start = "101" },
			want: Dead, reason: "start time differs"},
		{name: "start time unknown", owner: func(o *Owner) { o.StartTime = "unknown"; o.StartTimeFormat = "" },
			probe: func(p *fakeProbe) { p.start = "101" }, want: Alive, notCalled: []string{"start"}},
		{name: "start time unknown with a format", owner: func(o *Owner) { o.StartTime = "unknown" },
			probe: func(p *fakeProbe) { p.start = "101" }, want: Alive},
		{name: "start time empty", owner: func(o *Owner) { o.StartTime = "" }, probe: func(p *fakeProbe) { p.start = "101" },
			want: Alive},
		{name: "legacy record without format", owner: func(o *Owner) { o.StartTimeFormat = "" },
			probe: func(p *fakeProbe) { p.start = "101" }, want: Alive, notCalled: []string{"start"}},
		{name: "unknown format", owner: func(o *Owner) { o.StartTimeFormat = "bsd-kinfo-v1" },
			probe: func(p *fakeProbe) { p.start = "101" }, want: Alive, notCalled: []string{"start"}},
		{name: "start time unreadable", probe: func(p *fakeProbe) { p.start = ""; p.startErr = syscall.ENOENT }, want: Alive},
		// A record without pid_ns (the reference's) may come from a
		// process of a nested pid namespace: before a Dead, it is looked
		// for there.
		{name: "no pid_ns, ESRCH, nobody nested", owner: noNS, probe: esrch, want: Dead, reason: "ESRCH"},
		{name: "no pid_ns, ESRCH, owner nested", owner: noNS, probe: func(p *fakeProbe) { esrch(p); p.nested = true },
			want: Unknown, reason: "nested pid namespace"},
		{name: "no pid_ns, ESRCH, nested search failed", owner: noNS, probe: func(p *fakeProbe) { esrch(p); p.nestedErr = syscall.EACCES },
			want: Unknown, reason: "could not be searched"},
		{name: "no pid_ns and no format (the reference's), ESRCH, owner nested",
			owner: func(o *Owner) { noNS(o); o.StartTimeFormat = "" }, probe: func(p *fakeProbe) { esrch(p); p.nested = true },
			want: Unknown, reason: "nested pid namespace"},
		{name: "no pid_ns, start time differs, owner nested", owner: func(o *Owner) { noNS(o); o.PidfdIno = 0 },
			probe: func(p *fakeProbe) { p.start = "101"; p.nested = true }, want: Unknown, reason: "nested pid namespace"},
		{name: "no pid_ns, zombie, owner nested", owner: noNS, probe: func(p *fakeProbe) { p.zombie = true; p.nested = true },
			want: Unknown, reason: "nested pid namespace"},
		{name: "pid_ns recorded, ESRCH: no search", probe: func(p *fakeProbe) { esrch(p); p.nested = true },
			want: Dead, reason: "ESRCH", notCalled: []string{"nested"}},
		{name: "no pid_ns, ps start time, ESRCH: no search", owner: func(o *Owner) { noNS(o); o.StartTimeFormat = FormatPsUTC },
			probe: func(p *fakeProbe) { esrch(p); p.nested = true }, want: Dead, notCalled: []string{"nested"}},
		{name: "no pid_ns, unknown start time, ESRCH: no search", owner: func(o *Owner) { noNS(o); o.StartTime = UnknownStartTime },
			probe: func(p *fakeProbe) { esrch(p); p.nested = true }, want: Dead, notCalled: []string{"nested"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := liveOwner()
			if tc.owner != nil {
				tc.owner(&o)
			}
			p := liveProbe()
			if tc.probe != nil {
				tc.probe(p)
			}
			j := Judge{Host: HostIdentity{ID: hostA, LegacyID: legacyA}, HostLocal: tc.hostLocal, Probe: p}
			got := j.Judge(o)
			if got.Verdict != tc.want || !strings.Contains(got.Reason, tc.reason) {
				t.Fatalf("Judge = %v, want %v (%s); probes called: %v", got, tc.want, tc.reason, p.calls)
			}
			if got.Reason == "" {
				t.Fatal("no reason given")
			}
			for _, n := range tc.notCalled {
				if p.called(n) {
					t.Errorf("probe %s was called before the rule that decides; calls: %v", n, p.calls)
				}
			}
		})
	}
}

// TestJudgeCreationTime: the rule for the evidence Windows records carry
// (start_time "unknown", no format, no pidfd, boot id or pid namespace,
// and the process creation time): a different creation time at the pid
// proves reuse, an equal one keeps the lock, and one that cannot be read
// proves nothing. The TypeScript reference's records (no creation time)
// are judged by the probe alone, as the reference judges them.
func TestJudgeCreationTime(t *testing.T) {
	winOwner := func() Owner { return Owner{Pid: 4242, StartTime: UnknownStartTime, HostID: hostA, CreateTime: 500} }
	for _, tc := range []struct {
		name      string
		owner     func(*Owner)
		probe     func(*fakeProbe)
		want      Verdict
		reason    string
		notCalled []string
	}{
		{name: "same process", probe: func(p *fakeProbe) { p.ct = 500 }, want: Alive, reason: "creation time matches"},
		{name: "pid reused", probe: func(p *fakeProbe) { p.ct = 501 }, want: Dead, reason: "pid reused: creation time differs"},
		{name: "pid reused, access denied to signal", probe: func(p *fakeProbe) { p.ct = 499; p.signal = syscall.EPERM },
			want: Dead, reason: "creation time differs"},
		{name: "no such process", probe: func(p *fakeProbe) { p.ct = 500; p.signal = syscall.ESRCH }, want: Dead,
			reason: "ESRCH", notCalled: []string{"create"}},
		{name: "exited, kept by a handle", probe: func(p *fakeProbe) { p.ct = 500; p.zombie = true }, want: Dead,
			reason: "zombie", notCalled: []string{"create"}},
		{name: "creation time unreadable", probe: func(p *fakeProbe) { p.ctErr = syscall.EACCES }, want: Alive,
			reason: "start time unknown"},
		{name: "no creation time here", probe: func(p *fakeProbe) { p.ct = 0 }, want: Alive, reason: "start time unknown"},
		{name: "reference record", owner: func(o *Owner) { o.CreateTime = 0 }, probe: func(p *fakeProbe) { p.ct = 501 },
			want: Alive, reason: "start time unknown", notCalled: []string{"create"}},
		{name: "reference record, no such process", owner: func(o *Owner) { o.CreateTime = 0 },
			probe: func(p *fakeProbe) { p.signal = syscall.ESRCH }, want: Dead, reason: "ESRCH"},
		{name: "foreign host", owner: func(o *Owner) { o.HostID = "host-b" }, probe: func(p *fakeProbe) { p.ct = 501 },
			want: Alive, reason: "foreign host", notCalled: []string{"create", "signal"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := winOwner()
			if tc.owner != nil {
				tc.owner(&o)
			}
			p := &fakeProbe{}
			tc.probe(p)
			j := Judge{Host: HostIdentity{ID: hostA}, Probe: p}
			got := j.Judge(o)
			if got.Verdict != tc.want || !strings.Contains(got.Reason, tc.reason) {
				t.Fatalf("Judge = %v, want %v (%s); probes called: %v", got, tc.want, tc.reason, p.calls)
			}
			for _, n := range tc.notCalled {
				if p.called(n) {
					t.Errorf("probe %s was called before the rule that decides; calls: %v", n, p.calls)
				}
			}
		})
	}
}

func TestJudgeComparesTheRecordedFormat(t *testing.T) {
	p := &fakeProbe{start: "Wed Dec  2 12:08:29 2026"}
	j := Judge{Host: FixedHostIdentity(hostA), Probe: p}
	o := Owner{Pid: 42, HostID: hostA, StartTime: "Wed Dec  2 12:08:29 2026", StartTimeFormat: FormatPsUTC}
	if got := j.Judge(o); got.Verdict != Alive || !p.called("start:"+FormatPsUTC) {
		t.Fatalf("Judge = %v, calls %v", got, p.calls)
	}
}

func TestZeroJudgeRecognizesNoHost(t *testing.T) {
	p := &fakeProbe{signal: syscall.ESRCH}
	j := Judge{Probe: p}
	if got := j.Judge(Owner{Pid: 42, HostID: hostA}); got.Verdict != Alive {
		t.Fatalf("zero Judge = %v for a host-qualified record, want alive", got)
	}
	if len(p.calls) != 0 {
		t.Fatalf("zero Judge probed %v", p.calls)
	}
}

func TestVerdictZeroValueIsUnknown(t *testing.T) {
	var j Judgement
	if j.Verdict != Unknown || j.Verdict == Dead {
		t.Fatalf("zero Judgement is %v", j.Verdict)
	}
	for v, s := range map[Verdict]string{Dead: "dead", Alive: "alive", Unknown: "unknown", 7: "Verdict(7)"} {
		if v.String() != s {
			t.Errorf("%d.String() = %q, want %q", int(v), v.String(), s)
		}
	}
	if s := (Judgement{Dead, "zombie"}).String(); s != "dead (zombie)" {
		t.Errorf("Judgement.String() = %q", s)
	}
}

func TestEvidenceOwner(t *testing.T) {
	e := Evidence{Pid: 1, StartTime: "2", StartTimeFormat: FormatLinuxProc, BootID: "b", PidfdIno: 3, PidNS: 4, CreateTime: 5}
	want := Owner{Pid: 1, StartTime: "2", StartTimeFormat: FormatLinuxProc, HostID: "h", BootID: "b", PidfdIno: 3, PidNS: 4, CreateTime: 5}
	if got := e.Owner("h"); got != want {
		t.Fatalf("Owner = %+v", got)
	}
}

type fakeSyscallErr struct{ errno syscall.Errno }

func (e *fakeSyscallErr) Error() string { return "probe: " + e.errno.Error() }
func (e *fakeSyscallErr) Unwrap() error { return e.errno }
