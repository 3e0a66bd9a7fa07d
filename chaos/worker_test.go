package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"strconv"
	"time"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/internal/holdlog"
	"github.com/exactfs/exactfs/statelock"
)

// counter is the state file the Go and TypeScript workers share, in the
// TypeScript reference worker's shape: n, and one log entry per update with
// the writer's pid and the n it wrote. Go entries also carry the update's
// id, unique per update, so a history can say exactly which updates landed.
type counter struct {
	N   int     `json:"n"`
	Log []entry `json:"log"`
}

type entry struct {
	Pid int    `json:"pid"`
	N   int    `json:"n"`
	ID  string `json:"id,omitempty"`
}

func parseCounter(b []byte) (counter, error) {
	var c counter
	if len(b) == 0 {
		return c, nil
	}
	err := json.Unmarshal(b, &c)
	return c, err
}

func envInt(name string) int {
	n, _ := strconv.Atoi(os.Getenv(name))
	return n
}

// goWorker applies EXACTFS_CHAOS_COUNT updates to the counter, with ids
// <prefix>-<from> onward: Lock, read, add one and an entry, exactfs
// WriteFile (the engine Update uses), Unlock. It records each update's call
// and acknowledgement with CLOCK_MONOTONIC in the history file ("call <id>
// <ns>", "ok <id> <n> <ns>", one write each) and its critical section (from
// holding the lock to the durable write's return) in a hold log.
func goWorker() error {
	state := os.Getenv("EXACTFS_CHAOS_STATE")
	opts := []statelock.Option{statelock.WithConfigRoot(os.Getenv("EXACTFS_CHAOS_CONFIG")), statelock.WithWait(30 * time.Second)}
	hist, err := os.OpenFile(os.Getenv("EXACTFS_CHAOS_HIST"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	holds, err := holdlog.Open(os.Getenv("EXACTFS_CHAOS_HOLDS"))
	if err != nil {
		return err
	}
	prefix, from, count := os.Getenv("EXACTFS_CHAOS_PREFIX"), envInt("EXACTFS_CHAOS_FROM"), envInt("EXACTFS_CHAOS_COUNT")
	holdUs := envInt("EXACTFS_CHAOS_HOLD_US")
	record := func(format string, args ...any) error {
		ns, err := holdlog.Now()
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(hist, format+" %d\n", append(args, ns)...)
		return err
	}
	for i := from; i < from+count; i++ {
		id := prefix + "-" + strconv.Itoa(i)
		if err := record("call %s", id); err != nil {
			return err
		}
		h, err := statelock.Lock(context.Background(), state, opts...)
		if err != nil {
			return fmt.Errorf("update %s: %w", id, err)
		}
		for _, r := range h.Residue() {
			if !r.Removed {
				fmt.Fprintf(os.Stderr, "residue kept: %s (%s)\n", r.Name, r.Note)
			}
		}
		if err := holds.Enter(); err != nil {
			return err
		}
		old, err := os.ReadFile(state)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("update %s: %w", id, err)
		}
		c, err := parseCounter(old)
		if err != nil {
			return fmt.Errorf("update %s: the state file does not parse: %w", id, err)
		}
		c.N++
		c.Log = append(c.Log, entry{Pid: os.Getpid(), N: c.N, ID: id})
		if holdUs > 0 {
			time.Sleep(time.Duration(rand.IntN(holdUs)) * time.Microsecond)
		}
		data, err := json.Marshal(c)
		if err != nil {
			return err
		}
		if _, err := exactfs.WriteFile(state, data, 0o600); err != nil {
			return fmt.Errorf("update %s: %w", id, err)
		}
		if err := holds.Exit(); err != nil {
			return err
		}
		if err := h.Unlock(); err != nil {
			return fmt.Errorf("update %s: %w", id, err)
		}
		if err := record("ok %s %d", id, c.N); err != nil {
			return err
		}
	}
	return nil
}
