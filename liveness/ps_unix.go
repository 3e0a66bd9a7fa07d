//go:build linux || darwin

package liveness

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
)

// psPaths are tried before a PATH lookup: a library should not run
// whatever "ps" the caller's PATH happens to name first.
var psPaths = []string{"/bin/ps", "/usr/bin/ps"}

// psStartTime returns `ps -o lstart= -p <pid>` under the C locale in UTC,
// trimmed: the TypeScript peers' portable start time. The fixed locale and
// zone make the text identical whoever runs it.
func psStartTime(pid int) (string, error) {
	ps := ""
	for _, p := range psPaths {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			ps = p
			break
		}
	}
	if ps == "" {
		p, err := exec.LookPath("ps")
		if err != nil {
			return "", fmt.Errorf("liveness: ps start time: %w", err)
		}
		ps = p
	}
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, ps, "-o", "lstart=", "-p", strconv.Itoa(pid))
	cmd.Env = append(os.Environ(), "LC_ALL=C", "LANG=C", "TZ=UTC")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("liveness: ps start time of pid %d: %w", pid, err)
	}
	v := string(bytes.TrimSpace(out))
	if v == "" || bytes.ContainsAny([]byte(v), "\n\r") {
		return "", fmt.Errorf("liveness: ps start time of pid %d: unexpected output %q", pid, out)
	}
	return v, nil
}
