//go:build unix

package e2e

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestCLISlowLinkWithinBudget: behind a proxy that delays every chunk 1.1 s
// each way (a round trip of 2.2 s), updates succeed within their budget.
// With a fixed 1 s per request they could not: every attempt was cut
// before its answer came, until --op-timeout ran out (exit 74).
func TestCLISlowLinkWithinBudget(t *testing.T) {
	c := startCluster(t)
	p := startProxy(t, strings.TrimPrefix(c.members[0].clientURL, "http://"), 1100*time.Millisecond)
	url := "etcd://" + p.addr + "/slow/counter"
	for i := 0; i < 2; i++ {
		r := runCLI(t, nil, "", "update", "--op-timeout", "25s", "--timeout", "25s", url, "--", "sh", "-c", incr)
		r.want(t, 0)
		t.Logf("update %d over a 2.2 s round trip: %s", i+1, r.took.Round(time.Millisecond))
	}
	gr, err := c.client(t).Get(t.Context(), "/slow/counter")
	if err != nil || len(gr.Kvs) != 1 || strings.TrimSpace(string(gr.Kvs[0].Value)) != "2" {
		t.Fatalf("counter: %v %v; want 2", gr, err)
	}
}

// TestCLITimeoutBoundsReachingTheCluster: --timeout bounds getting the
// lock, reaching the cluster included: against a closed port, --timeout 2
// gives up after about 2 s (it took --op-timeout, 10 s, plus the dial
// before) with exit 74 and the reason.
func TestCLITimeoutBoundsReachingTheCluster(t *testing.T) {
	dead := freePort(t)
	url := "etcd://127.0.0.1:" + strconv.Itoa(dead) + "/k"
	for _, args := range [][]string{
		{"update", "--timeout", "2", url, "--", "cat"},
		{"lock", "-w", "2", url, "--", "true"},
	} {
		r := runCLI(t, nil, "", args...)
		r.want(t, 74, "within --timeout 2s", "no answer from etcd at", "connection refused")
		t.Logf("%v: gave up after %s", args, r.took.Round(time.Millisecond))
		if r.took > 6*time.Second {
			t.Errorf("%v: a 2 s budget took %s", args, r.took)
		}
	}
}
