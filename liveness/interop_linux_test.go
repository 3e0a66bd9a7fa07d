package liveness

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/exactfs/exactfs/internal/tsseed"
)

// tsEvidence runs the TypeScript peers' own host id and start time code (the
// ts-seed stand-ins, bundled in dist/lock.cjs) with GJC_CONFIG_ROOT set to
// configRoot, for pid.
func tsEvidence(t *testing.T, configRoot string, pid int) (hostID, legacyID, procStart, psStart string) {
	t.Helper()
	node, worker := tsseed.Worker(t)
	lock := filepath.Join(filepath.Dir(filepath.Dir(worker)), "dist", "lock.cjs")
	script := `const m = require(process.argv[1]);
(async () => {
  const pid = Number(process.argv[2]);
  process.stdout.write(JSON.stringify({
    host: await m.machineIdentity.loadInstallationHostId(),
    legacy: await m.machineIdentity.loadLegacyInstallationHostId(),
    proc: m.linuxProc.readLinuxProcStartTimeSync(pid),
    ps: m.fileLock.processStartTime(pid),
  }));
})().catch((e) => { console.error(e); process.exit(1); });`
	cmd := exec.Command(node, "-e", script, lock, strconv.Itoa(pid))
	env := []string{"GJC_CONFIG_ROOT=" + configRoot}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GJC_CONFIG_ROOT=") && !strings.HasPrefix(kv, "GJC_HOST_ID=") {
			env = append(env, kv)
		}
	}
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderrOf(err))
	}
	var r struct{ Host, Legacy, Proc, Ps string }
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("node printed %q: %v", out, err)
	}
	return r.Host, r.Legacy, r.Proc, r.Ps
}

func requireMachineID(t *testing.T) {
	t.Helper()
	if _, err := MachineID(); err != nil {
		t.Skipf("this host has no machine id the TypeScript peers could read: %v", err)
	}
}

// TestInteropHostIDGoCreatesSecret: a secret created by exactfs gives the
// TypeScript peers the same host id and legacy id.
func TestInteropHostIDGoCreatesSecret(t *testing.T) {
	requireMachineID(t)
	root := filepath.Join(t.TempDir(), "cfg")
	h, err := LoadHostIdentity(root)
	if err != nil {
		t.Fatal(err)
	}
	host, legacy, _, _ := tsEvidence(t, root, os.Getpid())
	if host != h.ID || legacy != h.LegacyID {
		t.Fatalf("TypeScript computes %s / %s, exactfs %s / %s", host, legacy, h.ID, h.LegacyID)
	}
}

// TestInteropHostIDTypeScriptCreatesSecret: a secret created by a
// TypeScript peer is accepted as is and gives the same ids.
func TestInteropHostIDTypeScriptCreatesSecret(t *testing.T) {
	requireMachineID(t)
	root := filepath.Join(t.TempDir(), "cfg")
	if err := os.Mkdir(root, 0o700); err != nil {
		t.Fatal(err)
	}
	host, legacy, _, _ := tsEvidence(t, root, os.Getpid())
	file := filepath.Join(root, SecretFileName)
	before, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("the TypeScript peer created no secret: %v", err)
	}
	h, err := LoadHostIdentity(root)
	if err != nil {
		t.Fatal(err)
	}
	if host != h.ID || legacy != h.LegacyID {
		t.Fatalf("TypeScript computes %s / %s, exactfs %s / %s", host, legacy, h.ID, h.LegacyID)
	}
	if after, _ := os.ReadFile(file); string(after) != string(before) {
		t.Fatal("exactfs rewrote the TypeScript peer's secret")
	}
}

// TestInteropStartTime: for a live process, exactfs reads the same start
// time as the TypeScript peers, in both formats, byte for byte.
func TestInteropStartTime(t *testing.T) {
	requireMachineID(t)
	pid := startSleeper(t).Process.Pid
	_, _, procStart, psStart := tsEvidence(t, t.TempDir(), pid)
	v, format, err := StartTime(pid)
	if err != nil || format != FormatLinuxProc || v != procStart {
		t.Fatalf("exactfs %q (%s, %v), TypeScript /proc reader %q", v, format, err, procStart)
	}
	ps, err := StartTimeAs(pid, FormatPsUTC)
	if err != nil || ps != psStart {
		t.Fatalf("exactfs ps start time %q (%v), TypeScript %q", ps, err, psStart)
	}
}
