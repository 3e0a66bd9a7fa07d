package etcd

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/exactfs/exactfs/liveness"
	"github.com/exactfs/exactfs/locker"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Entry is one key in a lock's queue.
type Entry struct {
	Key     string
	Token   int64 // create revision
	ModRev  int64 // mod revision: with Token and Lease, which key this was
	Lease   clientv3.LeaseID
	TTL     time.Duration // lease time left; -1 when the lease is gone, 0 without a lease
	Granted time.Duration // the lease's TTL as granted, 0 when TTL is not positive
	Meta    *Meta         // nil when the value is not holder metadata
	Bad     string        // why Meta is nil
	Verdict liveness.Judgement
}

// Queue is what InspectQueue found.
type Queue struct {
	Key      string  // the state key
	Prefix   string  // the lock's queue prefix
	Revision int64   // the revision read
	StateRev int64   // the state key's mod revision, 0 when absent
	Entries  []Entry // in queue order: Entries[0] holds the lock
}

// InspectQueue reads the lock's queue, the holder metadata and the time
// left on each lease, changing nothing.
func (l *Lock) InspectQueue(ctx context.Context) (*Queue, error) {
	cli := l.c.cli
	var resp *clientv3.TxnResponse
	err := l.c.retry(ctx, "reading the lock "+l.prefix, func(ctx context.Context) error {
		r, err := cli.Txn(ctx).Then(
			clientv3.OpGet(l.prefix, clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend)),
			clientv3.OpGet(l.key, clientv3.WithKeysOnly())).Commit()
		resp = r
		return err
	})
	if err != nil {
		return nil, err
	}
	q := &Queue{Key: l.key, Prefix: l.prefix, Revision: resp.Header.Revision}
	if kvs := resp.Responses[1].GetResponseRange().Kvs; len(kvs) == 1 {
		q.StateRev = kvs[0].ModRevision
	}
	judge := liveness.Judge{Host: l.c.host}
	for _, kv := range resp.Responses[0].GetResponseRange().Kvs {
		e := Entry{Key: string(kv.Key), Token: kv.CreateRevision, ModRev: kv.ModRevision, Lease: clientv3.LeaseID(kv.Lease)}
		if m, err := parseMeta(kv.Value); err == nil {
			e.Meta = m
			e.Verdict = judge.Judge(m.owner())
		} else {
			e.Bad = err.Error()
		}
		if e.Lease != clientv3.NoLease {
			var ttl, granted int64
			err := l.c.retry(ctx, "reading the lease of "+e.Key, func(ctx context.Context) error {
				r, err := cli.TimeToLive(ctx, e.Lease)
				if err == nil {
					ttl, granted = r.TTL, r.GrantedTTL
				}
				return err
			})
			if err != nil {
				return nil, err
			}
			e.TTL = time.Duration(ttl) * time.Second
			if ttl < 0 {
				e.TTL = -1
			} else {
				e.Granted = time.Duration(granted) * time.Second
			}
		}
		q.Entries = append(q.Entries, e)
	}
	return q, nil
}

// Inspect is locker.Locker's Inspect.
func (l *Lock) Inspect(ctx context.Context) (locker.Status, error) {
	q, err := l.InspectQueue(ctx)
	if err != nil {
		return locker.Status{}, err
	}
	st := locker.Status{Backend: "etcd", Lock: l.prefix, State: "free", Waiters: 0}
	if len(q.Entries) == 0 {
		return st, nil
	}
	e := q.Entries[0]
	st.State = "held"
	st.Waiters = len(q.Entries) - 1
	h := &locker.Holder{Token: strconv.FormatInt(e.Token, 10), TTL: e.TTL, Verdict: e.Verdict.Verdict.String(), Detail: e.Bad}
	if m := e.Meta; m != nil {
		h.Pid, h.Host, h.Since = int64(m.Pid), m.Host, m.Since
		h.Detail = m.Describe()
	}
	st.Holder = h
	return st, nil
}

// Action is one step Recover took or, in a dry run, would take.
type Action struct {
	Kind     string // "revoke-lease" or "delete-key"
	Key      string
	Lease    clientv3.LeaseID
	Evidence string
	Done     bool
	Err      error
}

// Recover removes from the lock's queue what would otherwise block it
// until a lease runs out or forever, each step only with proof:
//   - a key whose holder metadata names a process of this host that
//     package liveness proves dead: its lease is revoked (the dead process
//     can no longer keep it alive, but it would hold the lock for the rest
//     of its TTL);
//   - a key bound to no lease (no exactfs writer makes one; it would hold
//     the queue forever): deleted, with a compare on its create revision.
//
// A live holder, a holder on another host, and a key whose lease is alive
// but whose value is not ours are left alone: they end with their lease.
func (l *Lock) Recover(ctx context.Context, dryRun bool) ([]Action, error) {
	q, err := l.InspectQueue(ctx)
	if err != nil {
		return nil, err
	}
	var acts []Action
	for _, e := range q.Entries {
		var a Action
		switch {
		case e.Lease == clientv3.NoLease:
			a = Action{Kind: "delete-key", Key: e.Key, Evidence: fmt.Sprintf("bound to no lease (create revision %d): nothing would ever remove it", e.Token)}
		case e.Meta != nil && e.Verdict.Verdict == liveness.Dead:
			a = Action{Kind: "revoke-lease", Key: e.Key, Lease: e.Lease, Evidence: fmt.Sprintf("%s is dead: %s", e.Meta.Describe(), e.Verdict.Reason)}
		default:
			continue
		}
		if !dryRun {
			a.Err = l.c.retry(ctx, a.Kind+" "+a.Key, func(ctx context.Context) error {
				if a.Kind == "revoke-lease" {
					_, err := l.c.cli.Revoke(ctx, a.Lease)
					if err != nil && rpctypes.ErrorDesc(err) == rpctypes.ErrLeaseNotFound.Error() {
						return nil
					}
					return err
				}
				_, err := l.c.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(a.Key), "=", e.Token)).Then(clientv3.OpDelete(a.Key)).Commit()
				return err
			})
			a.Done = a.Err == nil
		}
		acts = append(acts, a)
	}
	return acts, nil
}
