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
	"sort"
	"strings"
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
	e := &env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, stderrTTY: isTerminal(os.Stderr)}
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
		fmt.Fprintf(e.stderr, "exactfs: unknown command %q\nRun 'exactfs help' for the list of commands.\n", name)
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
		fmt.Fprintf(e.stderr, "exactfs %s: %v\nusage: exactfs %s\nRun 'exactfs %s -h' for details.\n", c.name, err, c.usage, c.name)
		return exitUsage
	}
	if pos := fs.Args(); len(pos) > 0 && !c.local && backendScheme(pos[0]) != "" {
		return handOff(e, pos[0], args)
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
					return usagef("unknown command %q", args[0])
				}
				writeHelp(e.stdout, c)
				return nil
			}
			return usagef("too many arguments")
		},
	})
}
