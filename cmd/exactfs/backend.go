package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
)

// Backends other than the local filesystem are separate commands, so that
// exactfs itself depends on nothing but the library. An argument is a
// backend URL only if it starts with "scheme://"; every other argument is
// a path, as before.
const (
	etcdCommand = "exactfs-etcd"
	// Not "go install …@version": the etcd module replaces the core with its
	// checkout (../), and go install refuses a module with a replace.
	etcdInstall = "(cd etcd && go install ./cmd/exactfs-etcd) in a checkout of the exactfs repository"
)

var backendURL = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]*)://`)

// backendScheme returns the lower-cased scheme of arg when it is a backend
// URL, else "".
func backendScheme(arg string) string {
	m := backendURL.FindStringSubmatch(arg)
	if m == nil {
		return ""
	}
	return strings.ToLower(m[1])
}

func isEtcdScheme(s string) bool { return s == "etcd" || s == "etcds" }

// etcdArg returns the first etcd URL among args before a "--" (after it
// come CMD's own arguments), or "". It is used when the flags did not parse:
// they may be exactfs-etcd's own.
func etcdArg(args []string) string {
	for _, a := range args {
		if a == "--" {
			break
		}
		if isEtcdScheme(backendScheme(a)) {
			return a
		}
	}
	return ""
}

// unsupportedBackend is a scheme:// argument no backend serves.
type unsupportedBackend struct{ scheme, arg string }

func (u unsupportedBackend) Error() string {
	return fmt.Sprintf("unsupported backend scheme %q in %q: give a file path, or an etcd:// or etcds:// URL (served by %s)", u.scheme+"://", u.arg, etcdCommand)
}

// missingBackend is a backend command that is not installed.
type missingBackend struct{ url, looked string }

func (m missingBackend) Error() string {
	return fmt.Sprintf("%s is an etcd URL, served by the separate command %s, which is not installed (looked %s)", m.url, etcdCommand, m.looked)
}

// findEtcdCommand looks for exactfs-etcd beside this executable, then on
// PATH.
func findEtcdCommand() (path, looked string, err error) {
	name := etcdCommand
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	var places []string
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), name)
		places = append(places, "beside "+self)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && (runtime.GOOS == "windows" || fi.Mode().Perm()&0o111 != 0) {
			return p, "", nil
		}
	}
	places = append(places, "on PATH")
	looked = strings.Join(places, " and ")
	p, err := exec.LookPath(etcdCommand)
	if err != nil {
		return "", looked, missingBackend{looked: looked}
	}
	return p, looked, nil
}

// handOff runs the backend command that serves url with exactfs's own
// arguments (args, starting with the subcommand), and returns the exit
// status to leave with.
func handOff(e *env, url string, args []string) int {
	scheme := backendScheme(url)
	if !isEtcdScheme(scheme) {
		fmt.Fprintf(e.stderr, "exactfs %s: %v\n", args[0], unsupportedBackend{scheme, url})
		return exitUsage
	}
	path, _, err := findEtcdCommand()
	var mb missingBackend
	if errors.As(err, &mb) {
		mb.url = url
		fmt.Fprintf(e.stderr, "exactfs %s: %v\n  install it with: %s\n", args[0], mb, etcdInstall)
		return exitUnavail
	}
	return runBackend(e, path, args)
}
