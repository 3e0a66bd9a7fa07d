package main

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strings"

	"github.com/exactfs/exactfs/liveness"
	"github.com/exactfs/exactfs/statelock"
)

// A record's host id is an HMAC of this machine's id keyed by the secret of
// the writer's config root, so a lock written on this very machine by a
// process that used another config root (sudo with HOME=/root, another
// user, a TypeScript peer's ~/.gjc, a test's XDG_CONFIG_HOME) names a host
// this process does not recognize, and is respected as alive forever. The
// functions here find out, read-only, whether that is what happened: they
// look for an existing secret under the config roots such a writer would
// have used, and compute the host id it gives on this machine. A match
// proves the record was written here (the HMAC covers this machine's id),
// so its pid can be judged as any local record's is.

// otherConfigRoots lists the config roots a writer on this machine is
// likely to have used, except current: the environment's, the TypeScript
// peers' default (~/.gjc), and those of every home directory in
// /etc/passwd, for exactfs and for the TypeScript peers.
func otherConfigRoots(current string) []string {
	seen := map[string]bool{}
	var out []string
	add := func(p string) {
		if p == "" || !filepath.IsAbs(p) {
			return
		}
		p = filepath.Clean(p)
		if seen[p] || p == filepath.Clean(current) {
			return
		}
		seen[p] = true
		out = append(out, p)
	}
	add(os.Getenv("GJC_CONFIG_ROOT"))
	if x := os.Getenv("XDG_CONFIG_HOME"); x != "" {
		add(filepath.Join(x, "exactfs"))
	}
	if d, err := liveness.DefaultConfigRoot(); err == nil {
		add(d)
	}
	homes := []string{}
	if h, err := os.UserHomeDir(); err == nil {
		homes = append(homes, h)
	}
	if su := os.Getenv("SUDO_USER"); su != "" {
		if u, err := user.Lookup(su); err == nil {
			homes = append(homes, u.HomeDir)
		}
	}
	homes = append(homes, passwdHomes()...)
	for _, h := range homes {
		add(filepath.Join(h, ".config", "exactfs"))
		add(filepath.Join(h, "Library", "Application Support", "exactfs"))
		add(filepath.Join(h, ".gjc"))
	}
	return out
}

// passwdHomes returns the home directories named in /etc/passwd.
func passwdHomes() []string {
	f, err := os.Open("/etc/passwd")
	if err != nil {
		return nil
	}
	defer f.Close()
	var homes []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Split(sc.Text(), ":")
		if len(fields) >= 6 && strings.HasPrefix(fields[5], "/") && fields[5] != "/" {
			homes = append(homes, fields[5])
		}
	}
	return homes
}

// otherRoot is a config root of this machine under which a record's host
// id is local, and the verdict on the record's owner judged under it.
type otherRoot struct {
	Path    string `json:"path"`
	Verdict string `json:"verdict"` // alive, dead, unknown: as judged with that root's host id
	Reason  string `json:"reason"`
	host    liveness.HostIdentity
}

// findOtherRoot looks for the config root under which hostID is this
// machine's, and judges stateFile's lock record with it. It reads secrets
// that exist and creates or changes nothing.
func findOtherRoot(stateFile, hostID, current string, opts []statelock.Option) *otherRoot {
	if hostID == "" {
		return nil
	}
	for _, root := range otherConfigRoots(current) {
		h, err := liveness.PeekHostIdentity(root)
		if err != nil || !h.IsLocal(hostID) {
			continue
		}
		o := &otherRoot{Path: root, host: h, Verdict: "unknown", Reason: "the record could not be judged again"}
		s, err := statelock.Inspect(stateFile, append(opts, statelock.WithHostIdentity(h))...)
		if err == nil && s.Holder != nil {
			o.Verdict, o.Reason = s.Holder.Verdict, s.Holder.Reason
		}
		return o
	}
	return nil
}

// currentConfigRoot is the config root a command uses: --config-root, or
// the default.
func currentConfigRoot(flag string) string {
	if flag != "" {
		return flag
	}
	d, _ := liveness.DefaultConfigRoot()
	return d
}

// missingConfigRootError is a --config-root that does not exist. It is
// refused, not created: a new config root gets a new installation secret,
// so a mistyped one gives this host a new host id, and a lock left by a
// crash under it looks foreign to every peer (respected forever). Only the
// default root is created when missing, as the first run needs.
type missingConfigRootError struct {
	dir string
	err error
}

func (m missingConfigRootError) Error() string {
	return fmt.Sprintf("--config-root %s does not exist; nothing was created (a new config root would give this host a new host id)", m.dir)
}
func (m missingConfigRootError) Unwrap() error { return m.err }

// checkConfigRootFlag refuses a --config-root that does not exist, unless
// it is the default root.
func checkConfigRootFlag(dir string) error {
	_, err := os.Stat(dir)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return nil // there, or the lock call says what is wrong with it
	}
	if def, derr := liveness.DefaultConfigRoot(); derr == nil && filepath.Clean(def) == filepath.Clean(dir) {
		return nil
	}
	abs, aerr := filepath.Abs(dir)
	if aerr == nil && abs != filepath.Clean(dir) {
		dir = dir + " (" + abs + ")"
	}
	return missingConfigRootError{dir: dir, err: err}
}
