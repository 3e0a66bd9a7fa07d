// Command exactfs-etcd is the exactfs CLI on an etcd cluster: lock,
// update, status and recover for etcd:// and etcds:// URLs. The core
// exactfs command runs it (with the same arguments) when an argument is
// such a URL, so that the core module needs no etcd client.
//
//	exactfs-etcd update etcd://h1:2379,h2:2379/app/state.json -- jq -c '.n += 1'
//	exactfs-etcd lock etcd:///app/deploy -- ./deploy.sh     # endpoints in $EXACTFS_ETCD_ENDPOINTS
//	exactfs-etcd status etcds://h1:2379/app/state.json
//	exactfs-etcd recover etcd://h1:2379/app/state.json
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/exactfs/exactfs/etcd"
	"github.com/exactfs/exactfs/locker"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Exit statuses, the core exactfs command's (cmd/exactfs/exit.go).
const (
	exitOK       = 0
	exitUsage    = 64 // bad flags, arguments or URL
	exitDataErr  = 65 // update: CMD printed nothing (EX_DATAERR); the key is untouched
	exitUnknown  = 71 // update: the commit's outcome is unknown: the write may have applied
	exitIO       = 74 // any other failure, including a cluster that does not answer: nothing was written
	exitBusy     = 75 // the lock is held or the wait timed out; or the lock was lost: nothing was written
	exitMismatch = 76 // the key was changed by a writer that does not take the lock: nothing was written
	exitNoExec   = 126
	exitNotFound = 127
)

const exitHelp = `Exit status:
  0    success
  N    lock, update: the status of CMD itself (128+n if CMD was killed by signal n;
       126 if CMD could not be executed, 127 if it was not found)
  64   usage error, or a malformed URL
  65   update: CMD exited 0 but printed nothing; the key was left untouched
       (--allow-empty accepts an empty result)
  71   update: the commit got no answer and its outcome could not be
       established: the new value MAY have been written. Read the key before
       running a command that is not idempotent again
  74   other failure: the cluster did not answer within --op-timeout (or,
       while getting the lock, within --timeout), TLS, authentication or
       permission errors; nothing was written
  75   lock busy or timed out (--conflict-exit-code N overrides); also: the lock
       was lost (its lease expired) before the commit, and nothing was written;
       recover --release-holder: the holder looks alive, nothing was done
  76   the key was written by something that does not take the lock; nothing
       was written; recover --release-holder: the holder is not the TOKEN
       named, nothing was done
`

type env struct {
	prog   string // "exactfs-etcd", or "exactfs" when the core runs us so
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string
	target *etcd.Target // set by connect, for diagnosing a cluster that does not answer
	tls    *tls.Config
}

type command struct {
	name, usage, summary, help string
	flags                      func(*flag.FlagSet) any
	run                        func(e *env, opts any, args []string) error
}

var commands = map[string]*command{}

func register(c *command) { commands[c.name] = c }

func main() {
	prog := filepath.Base(os.Args[0])
	if prog == "" || prog == "." {
		prog = "exactfs-etcd"
	}
	e := &env{prog: prog, stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv}
	os.Exit(run(e, os.Args[1:]))
}

func run(e *env, args []string) int {
	if len(args) == 0 {
		overview(e, e.stderr)
		return exitUsage
	}
	name := args[0]
	switch name {
	case "-h", "-help", "--help", "help":
		if len(args) > 1 {
			if c, ok := commands[args[1]]; ok {
				writeHelp(e, e.stdout, c)
				return exitOK
			}
		}
		overview(e, e.stdout)
		return exitOK
	}
	c, ok := commands[name]
	if !ok {
		fmt.Fprintf(e.stderr, "%s: %q is not a command for etcd URLs (lock, update, status, recover)\nRun '%s help' for details.\n", e.prog, name, e.prog)
		return exitUsage
	}
	fs := flag.NewFlagSet(e.prog+" "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	opts := c.flags(fs)
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			writeHelp(e, e.stdout, c)
			return exitOK
		}
		return report(e, c, usagef("%v", err))
	}
	return report(e, c, c.run(e, opts, fs.Args()))
}

func overview(e *env, w io.Writer) {
	fmt.Fprintf(w, "usage: %s COMMAND [FLAGS] etcd://HOST:PORT[,HOST:PORT...]/KEY ...\n\nThe exactfs lock on an etcd cluster.\n\nCommands:\n", e.prog)
	var names []string
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-8s %s\n", n, commands[n].summary)
	}
	fmt.Fprintf(w, "\nURLs: etcd://h1:2379,h2:2379/KEY; etcd:///KEY takes the endpoints from\n$%s; etcds:// is TLS ($%s, $%s, $%s). An etcd user (RBAC) is\netcd://USER@HOST/KEY or $%s, with the password in $%s or a file named by\n$%s (never in the URL).\n\n%s", etcd.EnvEndpoints, etcd.EnvCACert, etcd.EnvCert, etcd.EnvKey, etcd.EnvUser, etcd.EnvPassword, etcd.EnvPasswordFile, exitHelp)
}

func writeHelp(e *env, w io.Writer, c *command) {
	fmt.Fprintf(w, "usage: %s %s\n\n%s\n\nFlags:\n", e.prog, c.usage, strings.TrimSpace(c.help))
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	c.flags(fs)
	fs.SetOutput(w)
	fs.PrintDefaults()
	fmt.Fprintf(w, "\n%s", exitHelp)
}

// usageError is a mistake in the command line.
type usageError struct{ msg string }

func (u usageError) Error() string { return u.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// exitStatus is CMD's status, passed through.
type exitStatus int

func (s exitStatus) Error() string { return "exit status " + strconv.Itoa(int(s)) }

// busyStatus carries the --conflict-exit-code of a busy failure.
type busyStatus struct {
	err    error
	status int
}

func (b busyStatus) Error() string { return b.err.Error() }
func (b busyStatus) Unwrap() error { return b.err }

func exitCode(err error) int {
	var st exitStatus
	var ue usageError
	var urlErr *etcd.URLError
	var bs busyStatus
	var uo *etcd.UnknownOutcomeError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &st):
		return int(st)
	case errors.As(err, &bs):
		return bs.status
	case errors.As(err, &ue), errors.As(err, &urlErr):
		return exitUsage
	case errors.As(err, &uo):
		return exitUnknown
	case errors.As(err, new(*etcd.HolderAliveError)):
		return exitBusy
	case errors.As(err, new(*etcd.HolderChangedError)):
		return exitMismatch
	case errors.As(err, new(emptyOutput)):
		return exitDataErr
	case errors.Is(err, locker.ErrLocked), errors.Is(err, locker.ErrLost):
		return exitBusy
	case errors.Is(err, etcd.ErrStateChanged):
		return exitMismatch
	}
	return exitIO
}

func hintFor(e *env, err error) string {
	var ua *etcd.UnavailableError
	var uo *etcd.UnknownOutcomeError
	switch {
	case errors.Is(err, locker.ErrLocked):
		return fmt.Sprintf("the lock is held; retry later, use --timeout to wait longer, or run '%s status URL' to see who holds it", e.prog)
	case errors.Is(err, locker.ErrLost):
		return "nothing was written: this process lost the lock (its lease expired: it was paused or cut off from the cluster longer than --ttl; or recover --release-holder released it); run it again"
	case errors.Is(err, etcd.ErrStateChanged):
		return "something wrote the key without taking the lock; find it, then run the update again"
	case errors.As(err, &uo):
		return fmt.Sprintf("read the key (%s status URL shows its revision) before running the update again", e.prog)
	case errors.As(err, new(emptyOutput)):
		return "if the command edits something itself, make it print the result instead; pass --allow-empty if an empty value is what you want"
	case errors.As(err, new(*etcd.HolderAliveError)):
		return fmt.Sprintf("check the holder first ('%s status URL'); if it is stuck, add --even-if-alive", e.prog)
	case errors.As(err, new(*etcd.HolderChangedError)):
		return fmt.Sprintf("run '%s status URL' and name the holder you mean by its token", e.prog)
	case rpctypes.ErrorDesc(err) == rpctypes.ErrRequestTooLarge.Error() || strings.Contains(err.Error(), rpctypes.ErrRequestTooLarge.Error()):
		return "etcd refuses a request over its --max-request-bytes (1.5 MiB by default): keep the value smaller, or raise that limit on every member"
	case errors.As(err, &ua):
		return fmt.Sprintf("check the endpoints and that the cluster is up (a majority of its members must be reachable); --op-timeout waits longer; $%s supplies endpoints for etcd:///KEY", etcd.EnvEndpoints)
	}
	return ""
}

// report prints err for a person and returns the exit status.
func report(e *env, c *command, err error) int {
	if err == nil {
		return exitOK
	}
	var st exitStatus
	if errors.As(err, &st) {
		return int(st)
	}
	var ue usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(e.stderr, "%s %s: %s\nusage: %s %s\nRun '%s %s -h' for details.\n", e.prog, c.name, ue.msg, e.prog, c.usage, e.prog, c.name)
		return exitUsage
	}
	fmt.Fprintf(e.stderr, "%s %s: %v\n", e.prog, c.name, err)
	var ua *etcd.UnavailableError
	if errors.As(err, &ua) && e.target != nil {
		for _, l := range etcd.Diagnose(e.target.Endpoints, e.tls, time.Second) {
			fmt.Fprintf(e.stderr, "  %s\n", l)
		}
	}
	if h := hintFor(e, err); h != "" {
		fmt.Fprintf(e.stderr, "  %s\n", h)
	}
	return exitCode(err)
}

// durationFlag takes "5s", "1m30s" or a number of seconds ("2.5"), and,
// where allowed (--timeout), "none" for no limit.
type durationFlag struct {
	d         time.Duration
	forever   bool
	set       bool // given on the command line
	allowNone bool
}

func (f *durationFlag) String() string {
	switch {
	case f == nil:
		return ""
	case f.forever:
		return "none"
	}
	return f.d.String()
}

func (f *durationFlag) Set(s string) error {
	f.set = true
	if s == "none" && f.allowNone {
		f.forever, f.d = true, 0
		return nil
	}
	f.forever = false
	d, err := time.ParseDuration(s)
	if err != nil {
		secs, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil {
			return fmt.Errorf("want a duration such as 5s, 1m or 2.5, got %q", s)
		}
		d = time.Duration(secs * float64(time.Second))
	}
	if d < 0 {
		return fmt.Errorf("a negative duration (%s) makes no sense", s)
	}
	f.d = d
	return nil
}

// clusterFlags are the flags of every command.
type clusterFlags struct {
	opTimeout  durationFlag
	ttl        durationFlag
	configRoot string
}

func (f *clusterFlags) register(fs *flag.FlagSet) {
	f.opTimeout = durationFlag{d: etcd.DefaultOpTimeout}
	f.ttl = durationFlag{d: etcd.DefaultTTL}
	fs.Var(&f.opTimeout, "op-timeout", "give up on a cluster that does not answer a step within `DUR`")
	fs.Var(&f.ttl, "ttl", "the session lease: a holder that stops (paused, cut off, killed)\nloses the lock after `DUR` (whole seconds)")
	fs.StringVar(&f.configRoot, "config-root", "", "`DIR` holding machine-identity.secret, the source of the host id in holder metadata")
}

// connect parses the URL and makes the lock client. reach bounds the
// connection's authentication (with an etcd user, clientv3 authenticates
// as it connects; without one it does not wait at connect).
func connect(e *env, f *clusterFlags, rawURL string, reach time.Duration, opts ...etcd.Option) (*etcd.Client, *etcd.Lock, *etcd.Target, error) {
	if !etcd.IsURL(rawURL) {
		return nil, nil, nil, usagef("%q is not an etcd URL (want etcd://HOST:PORT/KEY)", rawURL)
	}
	t, err := etcd.ParseURL(rawURL, e.getenv)
	if err != nil {
		return nil, nil, nil, err
	}
	tlsCfg, err := t.TLSConfig(e.getenv)
	if err != nil {
		return nil, nil, nil, err
	}
	e.target, e.tls = t, tlsCfg
	user, password, err := t.Credentials(e.getenv)
	if err != nil {
		return nil, nil, nil, err
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   t.Endpoints,
		DialTimeout: reach,
		TLS:         tlsCfg,
		Logger:      zap.NewNop(),
		Username:    user,
		Password:    password,
	})
	if err != nil {
		if user != "" && errors.Is(err, context.DeadlineExceeded) {
			return nil, nil, nil, &etcd.UnavailableError{Step: fmt.Sprintf("authenticating as etcd user %q within %s", user, reach), Endpoints: strings.Join(t.Endpoints, ","), Err: err}
		}
		if user != "" {
			return nil, nil, nil, fmt.Errorf("connecting to %s as etcd user %q (password from $%s or $%s): %w", strings.Join(t.Endpoints, ","), user, etcd.EnvPassword, etcd.EnvPasswordFile, err)
		}
		return nil, nil, nil, fmt.Errorf("connecting to %s: %w", strings.Join(t.Endpoints, ","), err)
	}
	opts = append([]etcd.Option{etcd.WithOpTimeout(f.opTimeout.d), etcd.WithTTL(f.ttl.d)}, opts...)
	if f.configRoot != "" {
		opts = append(opts, etcd.WithConfigRoot(f.configRoot))
	}
	c := etcd.NewClient(cli, opts...)
	return c, c.Locker(t.Key), t, nil
}

// closeClient revokes our session lease and closes the connection.
func closeClient(c *etcd.Client) {
	_ = c.Close()
	_ = c.Etcd().Close()
}
