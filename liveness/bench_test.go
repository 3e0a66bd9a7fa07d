package liveness

import (
	"os"
	"testing"
)

// BenchmarkJudgeLiveOwner measures one judgement of a live local owner
// with all evidence, the common case of a contended lock.
func BenchmarkJudgeLiveOwner(b *testing.B) {
	e, err := Self()
	if err != nil {
		b.Skip(err)
	}
	j := Judge{Host: FixedHostIdentity("h")}
	o := e.Owner("h")
	for b.Loop() {
		if v := j.Judge(o); v.Verdict != Alive {
			b.Fatal(v)
		}
	}
}

// BenchmarkJudgeLiveOwnerByStartTime is the same for a record without a
// pidfd inode (a TypeScript peer's, or one from a kernel before 6.9).
func BenchmarkJudgeLiveOwnerByStartTime(b *testing.B) {
	e, err := Self()
	if err != nil {
		b.Skip(err)
	}
	j := Judge{Host: FixedHostIdentity("h")}
	o := e.Owner("h")
	o.PidfdIno = 0
	for b.Loop() {
		if v := j.Judge(o); v.Verdict != Alive {
			b.Fatal(v)
		}
	}
}

// BenchmarkStartTime measures reading a start time the record's way.
func BenchmarkStartTime(b *testing.B) {
	pid := os.Getpid()
	for b.Loop() {
		if _, _, err := StartTime(pid); err != nil {
			b.Fatal(err)
		}
	}
}
