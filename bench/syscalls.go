//go:build unix

package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// syscallCount is a kind's system calls per increment: the difference
// between two runs of one worker (P=1) under strace -f -c, one of
// straceShort and one of straceLong increments (per goroutine for a group
// kind), divided by the difference in increments. The difference removes
// what does not recur per increment: the runtime's start, opening the
// database, printing the result.
type syscallCount struct {
	perIncrement float64
	byName       map[string]float64 // per increment, the calls that recur
}

const (
	straceShort = 20
	straceLong  = 120
)

func (b *bench) countSyscalls(kind string, seq int) (syscallCount, error) {
	var counts [2]map[string]int
	for i, k := range []int{straceShort, straceLong} {
		out := filepath.Join(b.base, fmt.Sprintf("strace-%03d-%d.txt", seq, i))
		if _, err := b.once(runSpec{kind: kind, p: 1, k: k, seq: seq*10 + i, strace: b.strace, straceTo: out}); err != nil {
			return syscallCount{}, err
		}
		c, err := parseStraceSummary(out)
		os.Remove(out)
		if err != nil {
			return syscallCount{}, err
		}
		counts[i] = c
	}
	g := 1
	if isGroup(kind) {
		g = b.goroutines
	}
	n := float64((straceLong - straceShort) * g)
	res := syscallCount{byName: map[string]float64{}}
	res.perIncrement = float64(counts[1]["total"]-counts[0]["total"]) / n
	for name, c := range counts[1] {
		if name == "total" {
			continue
		}
		if d := float64(c-counts[0][name]) / n; d >= 0.05 {
			res.byName[name] = d
		}
	}
	return res, nil
}

// parseStraceSummary reads the table strace -c writes: one line per system
// call ("% time, seconds, usecs/call, calls, [errors,] syscall") and a
// "total" line.
func parseStraceSummary(path string) (map[string]int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]int{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		fs := strings.Fields(s.Text())
		if len(fs) < 5 || len(fs) > 6 {
			continue
		}
		if _, err := strconv.ParseFloat(fs[0], 64); err != nil {
			continue // the header
		}
		calls, err := strconv.Atoi(fs[3])
		if err != nil {
			return nil, fmt.Errorf("%s: %q: the calls column is not a number", path, s.Text())
		}
		out[fs[len(fs)-1]] = calls
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	if _, ok := out["total"]; !ok {
		return nil, fmt.Errorf("%s: no total line in strace's summary", path)
	}
	return out, nil
}

// top is the calls of c, most frequent first, as "name n.n" pairs.
func (c syscallCount) top(n int) string {
	names := make([]string, 0, len(c.byName))
	for name := range c.byName {
		names = append(names, name)
	}
	slices.SortFunc(names, func(a, b string) int {
		if c.byName[a] != c.byName[b] {
			if c.byName[a] > c.byName[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	var parts []string
	for i, name := range names {
		if i == n {
			parts = append(parts, "…")
			break
		}
		parts = append(parts, fmt.Sprintf("%s %.1f", name, c.byName[name]))
	}
	return strings.Join(parts, ", ")
}
