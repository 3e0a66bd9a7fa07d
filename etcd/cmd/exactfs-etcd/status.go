package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/exactfs/exactfs/etcd"
)

type statusFlags struct {
	clusterFlags
	json bool
}

type recoverFlags struct {
	clusterFlags
	dryRun        bool
	releaseHolder int64 // the token of the holder to release by force; 0: none
	evenIfAlive   bool
}

func init() {
	register(&command{
		name:    "status",
		summary: "show who holds the lock of an etcd key, the time left on its lease, its token, and who waits",
		usage:   "status [--json] URL",
		help: `Describe the lock of the key named by URL without changing anything: free or
held; the holder's pid, host and since when; the time left on its session
lease (how long it can still hold the lock without keepalives, unless the
cluster elects a new leader meanwhile: etcd then gives every lease its full
TTL again); its fencing token (the lock key's create revision); the liveness
verdict where the holder is on this host; and the waiters in queue order. A
holder that is stuck and not provably dead is ended by recover
--release-holder TOKEN.

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
		summary: "end, with proof, dead holders' leases and keys no lease keeps; --release-holder: a stuck holder",
		usage:   "recover [--dry-run] [--release-holder TOKEN [--even-if-alive]] URL",
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

--release-holder TOKEN ends a holder that is stuck (its process stopped or
wedged, its command hung) and will not end by itself, and does only that: the
holder whose fencing token (status shows it) is TOKEN, and no other, so a
holder that released meanwhile and its successor are never touched. Its
session lease is revoked, which deletes its key; a transaction first confirms
that the key is still the one judged (create revision, mod revision, lease).
The message says what was revoked: the holder key, the lease, the holder's
metadata, and how long it was in the queue. A waiting successor gets the
lock after its --lock-delay; the released holder, if it runs on, finds its
lock lost: update writes nothing (exit 75) and lock sends its CMD SIGTERM
(exit 75) - but only once it hears from the cluster again, so a resource that
must never see two holders should check EXACTFS_LOCK_TOKEN. A holder that
looks alive (its lease is kept, and it is not proved dead on this host) is
released only with --even-if-alive: a stopped or wedged process looks alive
too, and only you can tell. Should its lease also keep other keys (other
locks of the same library client), only its key is deleted, and the
successor does not wait its lock-delay.

Exit status: 0 when every action succeeded or there was nothing to do, 74
when an action failed or the cluster did not answer. With --release-holder:
0 released (or, with --dry-run, would be); 75 refused because the holder
looks alive (--even-if-alive releases it); 76 the holder is not TOKEN (the
lock is free, someone else holds it, or it was released meanwhile): nothing
was done; 74 the cluster did not answer.`,
		flags: func(fs *flag.FlagSet) any {
			f := &recoverFlags{}
			f.clusterFlags.register(fs)
			fs.BoolVar(&f.dryRun, "dry-run", false, "print the plan; change nothing")
			fs.Int64Var(&f.releaseHolder, "release-holder", 0, "revoke the lease of the holder whose token is `TOKEN` (see status), and\ndo nothing else")
			fs.BoolVar(&f.evenIfAlive, "even-if-alive", false, "with --release-holder: release the holder even though it looks alive")
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
	return connect(e, f, args[0], f.opTimeout.d)
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
	if st.Holder.Lease == "" {
		fmt.Fprintf(w, "  token %d, bound to no lease: nothing removes it but recover\n", h.Token)
	} else {
		fmt.Fprintf(w, "  token %d, lease %s, %s\n", h.Token, st.Holder.Lease, ttlText(h.TTL))
	}
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
	switch {
	case f.releaseHolder < 0:
		return usagef("--release-holder wants the holder's token (a positive revision, as status shows it), got %d", f.releaseHolder)
	case f.evenIfAlive && f.releaseHolder == 0:
		return usagef("--even-if-alive goes with --release-holder TOKEN")
	}
	c, l, t, err := connectOne(e, &f.clusterFlags, args)
	if err != nil {
		return err
	}
	defer closeClient(c)
	if f.releaseHolder != 0 {
		return releaseHolder(e, f, l, t)
	}
	acts, err := l.Recover(context.Background(), f.dryRun)
	if err != nil {
		return err
	}
	if len(acts) == 0 {
		fmt.Fprintf(e.stdout, "%s: nothing to recover\n", t.URL)
		// Name the holder that was left alone, and how to end it if it is
		// stuck: the one thing recover will not do without being told.
		if q, err := l.InspectQueue(context.Background()); err == nil && len(q.Entries) > 0 {
			h := q.Entries[0]
			fmt.Fprintf(e.stdout, "  the holder, token %d (%s), is left alone: it is not proved dead; if it is stuck, '%s recover --release-holder %d URL' ends it\n", h.Token, describe(h), e.prog, h.Token)
		}
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

// releaseHolder is recover --release-holder: it ends the holder named by
// its token, and says what it revoked.
func releaseHolder(e *env, f *recoverFlags, l *etcd.Lock, t *etcd.Target) error {
	r, err := l.ReleaseHolder(context.Background(), f.releaseHolder, f.evenIfAlive, f.dryRun)
	if err != nil {
		return err
	}
	h := r.Holder
	did := "released"
	if r.DryRun {
		did = "would release"
	}
	switch {
	case r.Revoked:
		fmt.Fprintf(e.stdout, "%s: %s the holder: revoked its lease %x (its key went with it%s)\n", t.URL, did, int64(h.Lease), atRev(r.Rev))
	case r.Deleted:
		fmt.Fprintf(e.stdout, "%s: %s the holder: deleted its key%s; its lease %x was kept\n", t.URL, did, atRev(r.Rev), int64(h.Lease))
	case len(r.Others) == 0 && h.Lease != 0 && h.TTL > 0:
		fmt.Fprintf(e.stdout, "%s: %s the holder: revoke its lease %x (its key goes with it)\n", t.URL, did, int64(h.Lease))
	default:
		fmt.Fprintf(e.stdout, "%s: %s the holder: delete its key\n", t.URL, did)
	}
	fmt.Fprintf(e.stdout, "  holder key: %s (token %d, mod revision %d)\n", h.Key, h.Token, h.ModRev)
	if h.Meta != nil {
		fmt.Fprintf(e.stdout, "  holder: %s; host id %s; verdict %s (%s)\n", h.Meta.Describe(), h.Meta.HostID, h.Verdict.Verdict, h.Verdict.Reason)
		if !h.Meta.Since.IsZero() {
			fmt.Fprintf(e.stdout, "  held: in the queue since %s, so it held the lock for at most %s\n", h.Meta.Since.Local().Format(time.RFC3339), r.Judged.Sub(h.Meta.Since).Round(time.Millisecond))
		}
	} else {
		fmt.Fprintf(e.stdout, "  holder: a key that is not holder metadata (%s)\n", h.Bad)
	}
	fmt.Fprintf(e.stdout, "  its lease: %s", ttlText(h.TTL))
	if h.Granted > 0 {
		fmt.Fprintf(e.stdout, " of %s", h.Granted)
	}
	if r.Alive {
		fmt.Fprintf(e.stdout, "; it looked alive (--even-if-alive)")
	}
	fmt.Fprintln(e.stdout)
	if len(r.Others) > 0 {
		fmt.Fprintf(e.stdout, "  its lease also keeps %s (other locks of the same client): left alone, so the lease was not revoked, and the next holder waits no lock-delay\n", strings.Join(r.Others, ", "))
	}
	if !r.DryRun {
		fmt.Fprintf(e.stdout, "  should the holder run on, it finds its lock lost once it hears from the cluster: update writes nothing, lock sends its CMD SIGTERM\n")
	}
	return nil
}

// atRev is ", at revision N", or nothing when the revision is not known
// (the answer that carried it was lost, and a resend found the work done).
func atRev(rev int64) string {
	if rev == 0 {
		return ""
	}
	return fmt.Sprintf(", at revision %d", rev)
}
