package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

func init() {
	register(&command{
		name:    "version",
		local:   true,
		summary: "print the version of exactfs",
		usage:   "version",
		help:    "Print the module version, the VCS revision it was built from (when known), and the Go toolchain.",
		run: func(e *env, _ any, args []string) error {
			if len(args) != 0 {
				return usagef("version takes no arguments")
			}
			fmt.Fprintln(e.stdout, versionString())
			return nil
		},
	})
}

func versionString() string {
	v := "exactfs (unknown version)"
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v + " " + runtime.Version()
	}
	v = "exactfs " + bi.Main.Version
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = "+dirty"
			}
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev != "" {
		v += " rev " + rev + modified
	}
	return fmt.Sprintf("%s %s %s/%s", v, bi.GoVersion, runtime.GOOS, runtime.GOARCH)
}
