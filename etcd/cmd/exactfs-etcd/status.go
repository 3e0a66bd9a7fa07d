package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/exactfs/exactfs/etcd"
)

type statusFlags struct {
	clusterFlags
	json bool
}

type recoverFlags struct {
	clusterFlags
	dryRun bool
}

func init() {
	register(&command{
		name:    "status",
		summary: "show who holds the lock of an etcd key, the time left on its lease, its token, and who waits",
		usage:   "status [--json] URL",
		help: `Describe the lock of the key named by URL without changing anything: free or
held; the holder's pid, host and since when; the time left on its session
lease (the most it can still hold the lock without keepalives); its fencing
token (the lock key's create revision); the liveness verdict where the holder
is on this host; and the waiters in queue order.

JSON output (--json), one object; fields are added, never renamed or removed:
  {"url": "...", "key": "/app/state.json", "prefix": "/app/state.json.lock/",
   "revision": 120, "state_revision": 118 (0: the key does not exist),
   "lock": "free" | "held",
   "holder": null | {"key": "...", "token": 117, "lease": "2e6a23b1597b503",
                     "ttl_ms": 8000 (-1: the lease is gone), "pid": 4242,
                     "host": "web-1", "host_id": "...", "since": "RFC 3339",
                     "verdict": "alive" | "dead" | "unknown", "reason": "...",
                     "detail": "why the value is not holder metadata"},
   "waiters": [ same shape as holder ]}

Exit status: 0 when the lock could be read (free or held), 74 when the
cluster did not answer, 64 for a malformed URL.`,
		flags: func(fs *flag.FlagSet) any {
			f := &statusFlags{}
			f.clusterFlags.register(fs)
			fs.BoolVar(&f.json, "json", false, "print one JSON object (schema above)")
			return f
		},
		run: runStatus,
	})
	register(&command{
		name:    "recover",
		summary: "end, with proof, the leases of dead holders on this host and keys no lease keeps",
		usage:   "recover [--dry-run] URL",
		help: `Clear what would otherwise block the lock of the key named by URL until a lease
runs out, or forever, printing each action and its evidence:

  - a queue key whose holder metadata names a process of this host that is
    provably dead (package liveness: no such pid, the pid was reused, a
    different boot): its session lease is revoked at once, instead of after
    the rest of its TTL;
  - a queue key bound to no lease (exactfs never writes one; it would block
    the queue forever): deleted, only if it still has the create revision
    that was judged.

A live holder, a holder on another host, and keys whose lease is alive are
left alone: they end with their lease. With --dry-run nothing is changed.

Exit status: 0 when every action succeeded or there was nothing to do, 74
when an action failed or the cluster did not answer.`,
		flags: func(fs *flag.FlagSet) any {
			f := &recoverFlags{}
			f.clusterFlags.register(fs)
			fs.BoolVar(&f.dryRun, "dry-run", false, "print the plan; change nothing")
			return f
		},
		run: runRecover,
	})
}

type entryJSON struct {
	Key     string `json:"key"`
	Token   int64  `json:"token"`
	Lease   string `json:"lease,omitempty"`
	TTLms   int64  `json:"ttl_ms"`
	Pid     int    `json:"pid,omitempty"`
	Host    string `json:"host,omitempty"`
	HostID  string `json:"host_id,omitempty"`
	Since   string `json:"since,omitempty"`
	Verdict string `json:"verdict"`
	Reason  string `json:"reason,omitempty"`
	Detail  string `json:"detail,omitempty"`
}

type statusJSON struct {
	URL      string      `json:"url"`
	Key      string      `json:"key"`
	Prefix   string      `json:"prefix"`
	Revision int64       `json:"revision"`
	StateRev int64       `json:"state_revision"`
	Lock     string      `json:"lock"`
	Holder   *entryJSON  `json:"holder"`
	Waiters  []entryJSON `json:"waiters"`
}

func entryOf(en etcd.Entry) entryJSON {
	j := entryJSON{Key: en.Key, Token: en.Token, TTLms: en.TTL.Milliseconds(), Verdict: en.Verdict.Verdict.String(), Reason: en.Verdict.Reason, Detail: en.Bad}
	if en.TTL < 0 {
		j.TTLms = -1
	}
	if en.Lease != 0 {
		j.Lease = fmt.Sprintf("%x", int64(en.Lease))
	}
	if m := en.Meta; m != nil {
		j.Pid, j.Host, j.HostID = m.Pid, m.Host, m.HostID
		if !m.Since.IsZero() {
			j.Since = m.Since.Format(time.RFC3339Nano)
		}
	}
	return j
}

// connectOne connects for a command that takes exactly one URL.
func connectOne(e *env, f *clusterFlags, args []string) (*etcd.Client, *etcd.Lock, *etcd.Target, error) {
	if len(args) != 1 {
		return nil, nil, nil, usagef("want exactly one URL, got %d arguments", len(args))
	}
	return connect(e, f, args[0])
}

func runStatus(e *env, opts any, args []string) error {
	f := opts.(*statusFlags)
	c, l, t, err := connectOne(e, &f.clusterFlags, args)
	if err != nil {
		return err
	}
	defer closeClient(c)
	q, err := l.InspectQueue(context.Background())
	if err != nil {
		return err
	}
	st := statusJSON{URL: t.URL, Key: q.Key, Prefix: q.Prefix, Revision: q.Revision, StateRev: q.StateRev, Lock: "free", Waiters: []entryJSON{}}
	for i, en := range q.Entries {
		j := entryOf(en)
		if i == 0 {
			st.Lock, st.Holder = "held", &j
		} else {
			st.Waiters = append(st.Waiters, j)
		}
	}
	if f.json {
		return json.NewEncoder(e.stdout).Encode(st)
	}
	writeStatus(e.stdout, &st, q)
	return nil
}

func describe(en etcd.Entry) string {
	if en.Meta == nil {
		return fmt.Sprintf("a key that is not holder metadata (%s)", en.Bad)
	}
	return en.Meta.Describe()
}

func ttlText(d time.Duration) string {
	switch {
	case d < 0:
		return "lease gone (the key goes with it)"
	case d == 0:
		return "no lease"
	}
	return fmt.Sprintf("TTL left %s", d)
}

func writeStatus(w io.Writer, st *statusJSON, q *etcd.Queue) {
	state := "the key does not exist yet"
	if st.StateRev != 0 {
		state = fmt.Sprintf("the key was last written at revision %d", st.StateRev)
	}
	if len(q.Entries) == 0 {
		fmt.Fprintf(w, "%s: free (nobody holds or waits for %s); %s\n", st.URL, st.Prefix, state)
		return
	}
	h := q.Entries[0]
	fmt.Fprintf(w, "%s: held by %s\n", st.URL, describe(h))
	fmt.Fprintf(w, "  token %d, lease %s, %s\n", h.Token, st.Holder.Lease, ttlText(h.TTL))
	if h.Meta != nil {
		fmt.Fprintf(w, "  holder verdict: %s (%s)\n", h.Verdict.Verdict, h.Verdict.Reason)
	}
	fmt.Fprintf(w, "  %s\n", state)
	if n := len(q.Entries) - 1; n > 0 {
		fmt.Fprintf(w, "  %d waiting:\n", n)
		for _, en := range q.Entries[1:] {
			fmt.Fprintf(w, "    token %d: %s, %s\n", en.Token, describe(en), ttlText(en.TTL))
		}
	}
}

func runRecover(e *env, opts any, args []string) error {
	f := opts.(*recoverFlags)
	c, l, t, err := connectOne(e, &f.clusterFlags, args)
	if err != nil {
		return err
	}
	defer closeClient(c)
	acts, err := l.Recover(context.Background(), f.dryRun)
	if err != nil {
		return err
	}
	if len(acts) == 0 {
		fmt.Fprintf(e.stdout, "%s: nothing to recover\n", t.URL)
		return nil
	}
	failed := 0
	for _, a := range acts {
		what := "would"
		switch {
		case a.Err != nil:
			what = "FAILED"
			failed++
		case a.Done:
			what = "done"
		}
		fmt.Fprintf(e.stdout, "%s %s %s\n  evidence: %s\n", what, a.Kind, a.Key, a.Evidence)
		if a.Err != nil {
			fmt.Fprintf(e.stdout, "  error: %v\n", a.Err)
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d recovery actions failed", failed, len(acts))
	}
	return nil
}
