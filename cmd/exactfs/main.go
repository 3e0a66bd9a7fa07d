// Command exactfs makes the exactfs library usable from a shell: run a
// command under a state-file lock, update a state file without lost updates,
// inspect and recover a lock, and remove or replace a file only when it is
// exactly the one you looked at.
//
// Run "exactfs help" for the subcommands and their exit codes, and
// "exactfs demo" to watch the lock survive workers being killed mid-update.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"

	"github.com/exactfs/exactfs/internal/jobctl"
	"github.com/exactfs/exactfs/statelock"
)

// env is what a subcommand talks to. Tests of helpers substitute it; the
// binary uses the process's own streams.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	// stderrTTY reports whether stderr is a terminal, which turns on the
	// "waiting for ..." notes and the demo's live progress line.
	stderrTTY bool
}

// command is one subcommand.
type command struct {
	name    string
	summary string // one line for "exactfs help"
	usage   string // the synopsis, without "exactfs "
	help    string // the long help: what it does, flags come from the FlagSet
	hidden  bool
	// local marks a command whose arguments are never backend URLs (help,
	// version, demo, completion, man).
	local bool
	// takesCmd marks a command whose arguments after the first are a
	// command to run (lock, update): a word that looks like a flag there
	// may be CMD's own.
	takesCmd bool
	// flags builds the subcommand's FlagSet; run receives the parsed set.
	flags func(fs *flagSet) any
	run   func(e *env, opts any, args []string) error
}

// flagSet is flag.FlagSet, named short for the command table.
type flagSet = flag.FlagSet

var commands = map[string]*command{}

func register(c *command) { commands[c.name] = c }

func main() {
	if len(os.Args) > 1 && os.Args[1] == guardArg {
		// exactfs re-executed as the guard of a lock's CMD (guard.go).
		os.Exit(runGuard(os.Args[2:]))
	}
	e := &env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, stderrTTY: jobctl.IsTerminal(os.Stderr)}
	os.Exit(run(e, os.Args[1:]))
}

// run dispatches args to a subcommand and returns the process exit status.
func run(e *env, args []string) int {
	if len(args) == 0 {
		writeOverview(e.stderr)
		return exitUsage
	}
	name := args[0]
	switch name {
	case "-h", "-help", "--help":
		writeOverview(e.stdout)
		return exitOK
	case "-version", "--version":
		name = "version"
	}
	c, ok := commands[name]
	if !ok {
		fmt.Fprintf(e.stderr, "exactfs: unknown command %q%s\nRun 'exactfs help' for the list of commands.\n", name, didYouMean(name))
		return exitUsage
	}
	fs := flag.NewFlagSet("exactfs "+c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var opts any
	if c.flags != nil {
		opts = c.flags(fs)
	}
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			writeHelp(e.stdout, c)
			return exitOK
		}
		if u := etcdArg(args[1:]); u != "" && !c.local {
			return handOff(e, u, args) // flags exactfs-etcd knows and exactfs does not
		}
		fmt.Fprintf(e.stderr, "exactfs %s: %s\nusage: exactfs %s\nRun 'exactfs %s -h' for details.\n", c.name, longFlagNames(err.Error()), c.usage, c.name)
		return exitUsage
	}
	if pos := fs.Args(); len(pos) > 0 && !c.local && backendScheme(pos[0]) != "" {
		return handOff(e, pos[0], args)
	}
	if err := misplacedFlag(c, fs, fs.Args()); err != nil {
		return report(e, c, err)
	}
	if err := checkPathArgs(c, fs.Args()); err != nil {
		return report(e, c, err)
	}
	if f := fs.Lookup("config-root"); f != nil && f.Value.String() != "" {
		if err := checkConfigRootFlag(f.Value.String()); err != nil {
			return report(e, c, err)
		}
	}
	err := c.run(e, opts, fs.Args())
	return report(e, c, err)
}

// report prints err for a person and returns the exit status it maps to.
func report(e *env, c *command, err error) int {
	if err == nil {
		return exitOK
	}
	var st exitStatus
	if errors.As(err, &st) {
		// The command's own status passes through; it has spoken for itself.
		return int(st)
	}
	var ue usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(e.stderr, "exactfs %s: %s\nusage: exactfs %s\nRun 'exactfs %s -h' for details.\n", c.name, ue.msg, c.usage, c.name)
		return exitUsage
	}
	code := exitCode(err)
	if c.name == "status" || c.name == "recover" {
		inspectWording(err)
	}
	fmt.Fprintf(e.stderr, "exactfs %s: %v\n", c.name, err)
	if hint := hintFor(err, code); hint != "" {
		fmt.Fprintf(e.stderr, "  %s\n", hint)
	}
	var ce conflictError
	if errors.As(err, &ce) {
		return ce.status
	}
	return code
}

func writeOverview(w io.Writer) {
	fmt.Fprint(w, `exactfs: lock, update, inspect and remove files only when they are exactly
the ones you looked at. A symlink, FIFO or device where a file belongs is
refused, never followed.

Usage:
  exactfs <command> [flags] [arguments]

Commands:
`)
	names := make([]string, 0, len(commands))
	for n, c := range commands {
		if !c.hidden {
			names = append(names, n)
		}
	}
	sort.Slice(names, func(i, j int) bool { return commandOrder(names[i]) < commandOrder(names[j]) })
	for _, n := range names {
		fmt.Fprintf(w, "  %-8s %s\n", n, commands[n].summary)
	}
	fmt.Fprint(w, "\n"+exitCodeHelp+`
Run 'exactfs help <command>' (or 'exactfs <command> -h') for a command's
flags and examples. Start with 'exactfs demo'. Shell completion:
'exactfs completion bash|zsh|fish'; manual page: 'exactfs man'.
`)
}

// order in which "exactfs help" lists the commands: most used first.
var listOrder = []string{"lock", "update", "status", "recover", "stat", "rm", "write", "doctor", "demo", "version", "help"}

func commandOrder(name string) int {
	for i, n := range listOrder {
		if n == name {
			return i
		}
	}
	return len(listOrder)
}

func writeHelp(w io.Writer, c *command) {
	fmt.Fprintf(w, "usage: exactfs %s\n\n%s\n", c.usage, strings.TrimSpace(c.help))
	var flags strings.Builder
	for _, f := range flagsOf(c) {
		arg := "--" + f.name
		if f.alias != "" {
			arg = "-" + f.alias + ", " + arg
		}
		if f.arg != "" {
			arg += " " + f.arg
		}
		fmt.Fprintf(&flags, "  %s\n    \t%s", arg, strings.ReplaceAll(f.usage, "\n", "\n    \t"))
		if f.def != "" {
			fmt.Fprintf(&flags, " (default %s)", f.def)
		}
		flags.WriteString("\n")
	}
	if flags.Len() > 0 {
		fmt.Fprintf(w, "\nFlags:\n%s", flags.String())
	}
}

// flagDoc is one flag of a command as help, the man page and the shell
// completions present it.
type flagDoc struct {
	name, alias string // long name; its short flock-style alias, if any
	arg         string // the value's placeholder, "" for a boolean
	usage, def  string
	isBool      bool
}

// flagsOf lists the flags of c in name order, aliases folded into the flag
// they stand for.
func flagsOf(c *command) []flagDoc {
	if c.flags == nil {
		return nil
	}
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	c.flags(fs)
	short := map[string]string{}
	for a, long := range flagAliases {
		if fs.Lookup(a) != nil && fs.Lookup(long) != nil {
			short[long] = a
		}
	}
	var out []flagDoc
	fs.VisitAll(func(f *flag.Flag) {
		if long, ok := flagAliases[f.Name]; ok && short[long] == f.Name {
			return
		}
		arg, usage := flag.UnquoteUsage(f)
		d := flagDoc{name: f.Name, alias: short[f.Name], arg: arg, usage: usage}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			d.isBool = true
		}
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" {
			d.def = f.DefValue
		}
		out = append(out, d)
	})
	return out
}

func init() {
	register(&command{
		name:    "help",
		local:   true,
		summary: "show help for exactfs or one command",
		usage:   "help [COMMAND]",
		help:    "Print the list of commands and exit codes, or the help of one command.",
		run: func(e *env, _ any, args []string) error {
			switch len(args) {
			case 0:
				writeOverview(e.stdout)
				return nil
			case 1:
				c, ok := commands[args[0]]
				if !ok {
					return usagef("unknown command %q%s", args[0], didYouMean(args[0]))
				}
				writeHelp(e.stdout, c)
				return nil
			}
			return usagef("too many arguments")
		},
	})
}

// didYouMean suggests the commands whose names are close to name (a
// transposition, a missing or extra letter, or a prefix), as
// " (did you mean status?)", or "".
func didYouMean(name string) string {
	var close []string
	for n, c := range commands {
		if c.hidden && n != "man" && n != "completion" {
			continue
		}
		if editDistance(strings.ToLower(name), n) <= 2 || (len(name) >= 3 && strings.HasPrefix(n, strings.ToLower(name))) {
			close = append(close, n)
		}
	}
	if len(close) == 0 {
		return ""
	}
	sort.Strings(close)
	return " (did you mean " + strings.Join(close, " or ") + "?)"
}

// editDistance is the optimal string alignment distance between a and b:
// insertions, deletions, substitutions and transpositions of adjacent
// letters each count one.
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// singleDashFlag matches the flag package's "-name" in its messages.
var singleDashFlag = regexp.MustCompile(`flag(s)? (provided but not defined: |needs an argument: )?-([a-z][a-z-]+)`)

// longFlagNames rewrites the flag package's "-timeout" as "--timeout" in a
// message, the spelling help and the README use. One-letter flags keep
// their single dash.
func longFlagNames(msg string) string {
	return singleDashFlag.ReplaceAllString(msg, "flag$1 $2--$3")
}

// misplacedFlag refuses a flag of c given after the first positional
// argument: Go's flag parsing stops there, so 'update s.json --timeout 1
// -- jq .' would run "--timeout" as the command (after taking the lock and
// maybe waiting for it), and 'status s.json --json' would count --json as
// a second file. For lock and update, whose CMD follows STATEFILE, only
// what comes before CMD is looked at: when a "--" follows, every word
// before it (each must be a flag, or it is refused too); without one, the
// word right after STATEFILE, if it is a flag of c.
func misplacedFlag(c *command, fs *flagSet, pos []string) error {
	if len(pos) < 2 || pos[1] == "--" {
		return nil
	}
	isFlag := func(a string) (*flag.Flag, bool) {
		if !strings.HasPrefix(a, "-") || a == "-" || a == "--" {
			return nil, false
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		f := fs.Lookup(name)
		return f, f != nil
	}
	if !c.takesCmd {
		var flags, rest []string
		for _, a := range pos {
			if _, ok := isFlag(a); ok {
				flags = append(flags, a)
			} else {
				rest = append(rest, a)
			}
		}
		if len(flags) == 0 || pos[0] == flags[0] {
			return nil
		}
		return usagef("%s comes after %s, where it is not read as a flag: flags go before %s (exactfs %s %s)",
			flags[0], pos[0], positionalName(c), c.name, shellJoin(append(flags, rest...)))
	}
	dash := -1
	for i, a := range pos {
		if a == "--" {
			dash = i
			break
		}
	}
	var moved, cmd []string
	switch {
	case dash > 1:
		moved, cmd = pos[1:dash], pos[dash+1:]
		if !strings.HasPrefix(moved[0], "-") {
			return nil // STATEFILE CMD... -- ARG: "--" is CMD's own
		}
	default:
		f, ok := isFlag(pos[1])
		if !ok {
			return nil
		}
		n := 1
		if b, isBool := f.Value.(interface{ IsBoolFlag() bool }); !(isBool && b.IsBoolFlag()) && !strings.Contains(pos[1], "=") && len(pos) > 2 {
			n = 2
		}
		moved, cmd = pos[1:1+n], pos[1+n:]
	}
	if _, ok := isFlag(moved[0]); !ok {
		return usagef("%s after %s, before --: it is not a flag of %s, and flags go before STATEFILE", moved[0], pos[0], c.name)
	}
	fix := append(append(append([]string{}, moved...), pos[0], "--"), cmd...)
	return usagef("%s comes after STATEFILE %s, where it would be run as the command: flags go before STATEFILE (exactfs %s %s); nothing was locked or run",
		moved[0], pos[0], c.name, shellJoin(fix))
}

// shellJoin joins words for a command line a person can paste, quoting
// what the shell would split or expand.
func shellJoin(words []string) string {
	out := make([]string, len(words))
	for i, w := range words {
		if w != "" && strings.IndexFunc(w, func(r rune) bool {
			return !(r == '-' || r == '_' || r == '.' || r == '/' || r == '=' || r == ':' || r == ',' || r == '+' ||
				r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
		}) < 0 {
			out[i] = w
		} else {
			out[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
		}
	}
	return strings.Join(out, " ")
}

// positionalName is what the first argument of c is called in its usage.
func positionalName(c *command) string {
	if c.takesCmd || strings.Contains(c.usage, "STATEFILE") {
		return "STATEFILE"
	}
	return "PATH"
}

// inspectWording makes a lock failure that status or recover ran into say
// "cannot inspect", not "cannot take": they take no lock, and a person
// reading "cannot take" looks for a holder that is not there.
func inspectWording(err error) {
	if le := lockFailed(err); le != nil && le.Code == statelock.ReasonInitFailed {
		le.Detail = strings.Replace(le.Detail, "cannot take ", "cannot inspect ", 1)
	}
}
