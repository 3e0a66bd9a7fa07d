package holdlog

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/windows"
)

// stampChildEnv makes this test binary a stamp child (see TestMain).
const stampChildEnv = "EXACTFS_HOLDLOG_STAMP_CHILD"

// TestMain lets TestNowOrdersAcrossProcesses run this binary as a second
// process: with stampChildEnv set it prints a stamp, waits for a line on
// stdin, prints a second stamp and exits without running any test.
func TestMain(m *testing.M) {
	if os.Getenv(stampChildEnv) == "1" {
		os.Exit(stampChild())
	}
	os.Exit(m.Run())
}

func stampChild() int {
	a, err := Now()
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	fmt.Println(a)
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		fmt.Println("error reading stdin:", err)
		return 1
	}
	b, err := Now()
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	fmt.Println(b)
	return 0
}

func init() { wineVersion = wineVersionWindows }

// wineVersionWindows returns what ntdll's wine_get_version says, or "" on
// real Windows, whose ntdll has no such export.
func wineVersionWindows() string {
	p := windows.NewLazySystemDLL("ntdll.dll").NewProc("wine_get_version")
	if p.Find() != nil {
		return ""
	}
	r, _, _ := p.Call()
	// r points to a constant string in ntdll, not into Go's heap.
	if v := windows.BytePtrToString(*(**byte)(unsafe.Pointer(&r))); v != "" {
		return v
	}
	return "(unknown version)"
}

// TestNowOrdersAcrossProcesses: stamps taken by two processes in a known
// order (each step waits for the other process's previous one) must come
// out in that order. A per-process clock (such as one counting from process
// start) fails this: the child's first stamp would be smaller than the
// parent's first.
func TestNowOrdersAcrossProcesses(t *testing.T) {
	var stamps []int64
	stamp := func() {
		t.Helper()
		ns, err := Now()
		if err != nil {
			t.Fatal(err)
		}
		stamps = append(stamps, ns)
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), stampChildEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	r := bufio.NewReader(stdout)
	childStamp := func() {
		t.Helper()
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the child's stamp: %v (got %q)", err, line)
		}
		ns, err := strconv.ParseInt(strings.TrimSpace(line), 10, 64)
		if err != nil {
			t.Fatalf("the child printed %q, not a stamp", line)
		}
		stamps = append(stamps, ns)
	}

	stamp() // parent, before the child exists
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	childStamp() // child
	stamp()      // parent
	if _, err := io.WriteString(stdin, "go\n"); err != nil {
		t.Fatal(err)
	}
	childStamp() // child
	if err := cmd.Wait(); err != nil {
		t.Fatalf("stamp child: %v", err)
	}
	stamp() // parent, after the child exited

	for i := 1; i < len(stamps); i++ {
		if stamps[i] <= stamps[i-1] {
			t.Fatalf("stamps out of order (parent, child, parent, child, parent): %v", stamps)
		}
	}
	t.Logf("stamps (parent, child, parent, child, parent): %v", stamps)
}

// TestTicksToNs: the conversion is exact for whole seconds and does not
// overflow at uptimes where ticks*1e9 would.
func TestTicksToNs(t *testing.T) {
	for _, tc := range []struct{ c, freq, want int64 }{
		{0, 10_000_000, 0},
		{1, 10_000_000, 100},
		{10_000_000, 10_000_000, 1_000_000_000},
		{15_000_001, 10_000_000, 1_500_000_100},
		{3, 3_000_000_000, 1},
		// A year of uptime at 10 MHz: c*1e9 overflows int64 by far.
		{365 * 86400 * 10_000_000, 10_000_000, 365 * 86400 * 1_000_000_000},
		// The largest tick count whose result fits.
		{math.MaxInt64 / 100, 10_000_000, math.MaxInt64 / 100 * 100},
	} {
		if got := ticksToNs(tc.c, tc.freq); got != tc.want {
			t.Errorf("ticksToNs(%d, %d) = %d, want %d", tc.c, tc.freq, got, tc.want)
		}
	}
}
