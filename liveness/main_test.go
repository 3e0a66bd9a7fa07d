package liveness

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"
)

// helperEnv selects a helper mode when the test binary is re-executed as a
// child process by a test (see TestMain).
const helperEnv = "LIVENESS_TEST_HELPER"

func TestMain(m *testing.M) {
	switch mode := os.Getenv(helperEnv); mode {
	case "":
		os.Exit(m.Run())
	case "secret":
		os.Exit(helperSecret())
	case "sleep":
		time.Sleep(time.Hour)
		os.Exit(0)
	default:
		h := helpers[mode]
		if h == nil {
			fmt.Fprintf(os.Stderr, "unknown helper mode %q\n", mode)
			os.Exit(2)
		}
		os.Exit(h())
	}
}

// helpers holds platform-specific helper modes, registered by init
// functions of platform test files.
var helpers = map[string]func() int{}

// helperCommand returns a command that re-executes the test binary in the
// given helper mode.
func helperCommand(t testing.TB, mode string, env ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{helperEnv + "=" + mode}, env...)...)
	return cmd
}

// startSleeper starts a child process that lives until the test kills it.
// The cleanup kills and reaps it, so no test leaves a zombie behind.
func startSleeper(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := helperCommand(t, "sleep")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd
}

// stderrOf returns what a failed child printed to its standard error.
func stderrOf(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(ee.Stderr)
	}
	return ""
}
