// Package tsseed runs the TypeScript reference implementation of the
// state-file lock (shared/interop/ts-seed: the seed 003, unmodified, bundled
// for Node 20) from Go tests, so that exactfs processes and TypeScript
// processes can contend on one state file.
//
// The harness lives outside the repository, in shared/ beside the clone
// (../shared from the module root), or wherever EXACTFS_SHARED_DIR points.
// Its build (npm ci, tsc, esbuild) runs once per version of its sources and
// is cached in the user's cache directory (EXACTFS_TS_SEED_CACHE overrides),
// so only the first test run on a machine pays for npm ci.
//
// Without node 20 or newer, npm (for the first build) or the shared
// directory, tests are skipped, and fail in CI (see testfs.Require).
package tsseed

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/exactfs/exactfs/internal/holdlog"
	"github.com/exactfs/exactfs/internal/testfs"
)

// SharedDirEnv names the environment variable that overrides where shared/
// is found.
const SharedDirEnv = "EXACTFS_SHARED_DIR"

// CacheDirEnv names the environment variable that overrides where the built
// harness is cached.
const CacheDirEnv = "EXACTFS_TS_SEED_CACHE"

// prepareTimeout bounds the first build (npm ci from the registry, tsc,
// esbuild); it took about 20 s here.
const prepareTimeout = 15 * time.Minute

// SourceDir returns the ts-seed harness directory:
// $EXACTFS_SHARED_DIR/interop/ts-seed, or else ../shared/interop/ts-seed
// next to the first directory, walking up from the working directory (a
// package directory under `go test`), that has a go.mod and such a sibling.
func SourceDir() (string, error) {
	if d := os.Getenv(SharedDirEnv); d != "" {
		src := filepath.Join(d, "interop", "ts-seed")
		if _, err := os.Stat(filepath.Join(src, "prepare.sh")); err != nil {
			return "", fmt.Errorf("%s=%s: %w", SharedDirEnv, d, err)
		}
		return src, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			src := filepath.Join(filepath.Dir(dir), "shared", "interop", "ts-seed")
			if _, err := os.Stat(filepath.Join(src, "prepare.sh")); err == nil {
				return src, nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no ../shared/interop/ts-seed/prepare.sh beside a go.mod above %s (set %s)", wd, SharedDirEnv)
		}
		dir = parent
	}
}

type prepared struct {
	node, worker string
	// what and reason are set when a prerequisite is missing (Require).
	what, reason string
	// err is a real failure (the build broke): the test fails everywhere.
	err error
}

var (
	prepMu   sync.Mutex
	prepDone *prepared
)

// Worker prepares the harness once per test binary and returns the node
// binary and the worker script, to be run as
//
//	node worker.js <stateFile> <increments> [--hold-ms N] [--log FILE]
//
// with GJC_CONFIG_ROOT set (see [Command]).
func Worker(t testing.TB) (nodePath, workerJS string) {
	t.Helper()
	p := prepareOnce()
	if p.what != "" {
		testfs.Require(t, p.what, false, p.reason)
	}
	if p.err != nil {
		t.Fatalf("ts-seed: %v", p.err)
	}
	return p.node, p.worker
}

// Prepare is [Worker] for a program that is not a test (the peer benchmark
// in bench/): it prepares the harness once per process, in the same cache,
// and returns an error that names what is missing instead of skipping.
func Prepare() (nodePath, workerJS string, err error) {
	p := prepareOnce()
	if p.what != "" {
		return "", "", fmt.Errorf("the TypeScript reference worker needs %s: %s", p.what, p.reason)
	}
	if p.err != nil {
		return "", "", fmt.Errorf("ts-seed: %w", p.err)
	}
	return p.node, p.worker, nil
}

func prepareOnce() prepared {
	prepMu.Lock()
	defer prepMu.Unlock()
	if prepDone == nil {
		p := prepare()
		prepDone = &p
	}
	return *prepDone
}

func prepare() prepared {
	src, err := SourceDir()
	if err != nil {
		return prepared{what: "shared/interop/ts-seed", reason: err.Error()}
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return prepared{what: "node 20+", reason: "node not found in $PATH"}
	}
	out, err := exec.Command(node, "--version").Output()
	if err != nil {
		return prepared{what: "node 20+", reason: fmt.Sprintf("%s --version: %v", node, err)}
	}
	version := strings.TrimSpace(string(out))
	if major, ok := nodeMajor(version); !ok || major < 20 {
		return prepared{what: "node 20+", reason: node + " is " + version}
	}

	key, err := sourceKey(src, version)
	if err != nil {
		return prepared{err: err}
	}
	root, err := cacheRoot()
	if err != nil {
		return prepared{err: err}
	}
	final := filepath.Join(root, key)
	worker := filepath.Join(final, "bin", "worker.js")
	if built(final) {
		return prepared{node: node, worker: worker}
	}
	if _, err := exec.LookPath("npm"); err != nil {
		return prepared{what: "npm", reason: "npm not found in $PATH, and the ts-seed harness is not built yet"}
	}

	// Several test binaries may start at once (go test ./... runs packages
	// in parallel): one builds while the others wait for it.
	unlock, err := lockDir(root)
	if err != nil {
		return prepared{err: err}
	}
	defer unlock()
	if built(final) {
		return prepared{node: node, worker: worker}
	}
	// Build in a private directory and rename it into place, so a
	// half-built harness is never at the final name.
	tmp, err := os.MkdirTemp(root, "build-")
	if err != nil {
		return prepared{err: err}
	}
	defer os.RemoveAll(tmp)
	out2 := filepath.Join(tmp, "ts-seed")
	ctx, cancel := context.WithTimeout(context.Background(), prepareTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(src, "prepare.sh"), out2)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if _, err := cmd.Output(); err != nil {
		return prepared{err: fmt.Errorf("%s %s: %v\n%s", filepath.Join(src, "prepare.sh"), out2, err, stderr.Bytes())}
	}
	if !built(out2) {
		return prepared{err: fmt.Errorf("prepare.sh succeeded but %s has no dist/lock.cjs or bin/worker.js", out2)}
	}
	if err := os.Rename(out2, final); err != nil {
		return prepared{err: err}
	}
	return prepared{node: node, worker: worker}
}

func built(dir string) bool {
	for _, p := range []string{"dist/lock.cjs", "bin/worker.js"} {
		if fi, err := os.Stat(filepath.Join(dir, p)); err != nil || !fi.Mode().IsRegular() {
			return false
		}
	}
	return true
}

// nodeMajor parses "v20.20.2".
func nodeMajor(version string) (int, bool) {
	v, ok := strings.CutPrefix(version, "v")
	if !ok {
		return 0, false
	}
	major, _, _ := strings.Cut(v, ".")
	n, err := strconv.Atoi(major)
	return n, err == nil
}

// sourceKey hashes the harness sources (not its build outputs) and the node
// version, so that a change to either rebuilds.
func sourceKey(src, nodeVersion string) (string, error) {
	var files []string
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "dist") {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	sort.Strings(files)
	h := sha256.New()
	fmt.Fprintf(h, "node %s\n", nodeVersion)
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			return "", err
		}
		rel, _ := filepath.Rel(src, p)
		fmt.Fprintf(h, "%s\x00%d\x00", filepath.ToSlash(rel), len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

func cacheRoot() (string, error) {
	root := os.Getenv(CacheDirEnv)
	if root == "" {
		if d, err := os.UserCacheDir(); err == nil {
			root = filepath.Join(d, "exactfs-ts-seed")
		} else {
			root = filepath.Join(os.TempDir(), "exactfs-ts-seed-"+strconv.Itoa(os.Getuid()))
		}
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	return root, nil
}

// Command returns, not started, a TypeScript worker that does increments
// increments of {"n": ...} in stateFile, each under the reference lock,
// sleeping holdMs inside the critical section, and appending its hold
// intervals to logFile in the [holdlog] format (no log when logFile is
// empty). configRoot is the worker's GJC_CONFIG_ROOT: give it the config
// root that exactfs uses, and both compute the same host id.
//
// The worker prints one summary line on stdout and exits 0, or prints the
// error on stderr and exits 1; Stdout and Stderr are left for the caller to
// set. The process is killed if it still runs when the test ends.
func Command(t testing.TB, configRoot, stateFile string, increments, holdMs int, logFile string) *exec.Cmd {
	t.Helper()
	node, worker := Worker(t)
	args := []string{worker, stateFile, strconv.Itoa(increments)}
	if holdMs > 0 {
		args = append(args, "--hold-ms", strconv.Itoa(holdMs))
	}
	if logFile != "" {
		args = append(args, "--log", logFile)
	}
	cmd := exec.CommandContext(t.Context(), node, args...)
	cmd.WaitDelay = 5 * time.Second
	env := []string{"GJC_CONFIG_ROOT=" + configRoot}
	for _, kv := range os.Environ() {
		// GJC_HOST_ID would replace the host id derivation under test.
		if !strings.HasPrefix(kv, "GJC_CONFIG_ROOT=") && !strings.HasPrefix(kv, "GJC_HOST_ID=") {
			env = append(env, kv)
		}
	}
	cmd.Env = env
	return cmd
}

// Run runs a worker as [Command] does, waits for it, and returns its summary
// line ("worker pid=... increments=... elapsed_ms=... max_wait_ms=...").
// The test fails, with the worker's output, if it exits non-zero.
func Run(t testing.TB, configRoot, stateFile string, increments, holdMs int, logFile string) string {
	t.Helper()
	cmd := Command(t, configRoot, stateFile, increments, holdMs, logFile)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("ts-seed worker on %s: %v\nstdout: %s\nstderr: %s", stateFile, err, stdout.Bytes(), stderr.Bytes())
	}
	return strings.TrimSpace(stdout.String())
}

// CheckNoOverlap is [holdlog.CheckNoOverlap]: it checks enter/exit logs
// written by TypeScript workers and by Go processes (holdlog.Log) together.
func CheckNoOverlap(logs ...string) error { return holdlog.CheckNoOverlap(logs...) }
