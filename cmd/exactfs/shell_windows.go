package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/windows"
)

// On Windows -c runs its string through cmd.exe, as /bin/sh -c does on
// Unix: `"<ComSpec>" /d /s /c "<string>"`, started inside the Job object
// like any CMD (guard_windows.go).
//
//   - The interpreter is %ComSpec% when it is an absolute path, else
//     cmd.exe in the system directory (GetSystemDirectory). Never a bare
//     "cmd.exe": CreateProcess, and a PATH search, would look in the
//     current directory first, where a planted cmd.exe would win.
//   - /d: no AutoRun command from the registry runs before the string.
//     /s /c "<string>": cmd.exe drops the first and the last quote of the
//     rest of its command line and runs what is between exactly as
//     written, whatever quotes, &, |, ^ or % it holds.
//   - The command line is passed verbatim (SysProcAttr.CmdLine). Go's
//     default quoting of argv follows the MSVC rules (\" for a quote),
//     which cmd.exe does not know: `echo "a & b"` would reach it as
//     `echo \"a & b\"`, whose & is outside any quotes and starts a second
//     command.
//   - cmd.exe expands %NAME% when NAME is set (%EXACTFS_LOCK_PATH%,
//     %EXACTFS_LOCK_TOKEN%), as sh expands $NAME, and leaves an unset
//     %NAME% as typed.
//   - A line break would end the command: cmd.exe runs the first line
//     alone. Such a string is refused; put the lines in a .cmd file.

// shellArgv is the command -c runs: the interpreter's absolute path, its
// switches, and the string; start passes them as cmdExeLine.
func shellArgv(s string) ([]string, error) {
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		return nil, usagef("-c: the command has a line break at byte %d; cmd.exe would run only the first line and drop the rest: put the lines in a .cmd file and run that instead (STATEFILE -- file.cmd)", i)
	}
	shell, err := comSpec()
	if err != nil {
		return nil, err
	}
	return []string{shell, "/d", "/s", "/c", s}, nil
}

// comSpec is the cmd.exe that -c runs: %ComSpec% when it names an absolute
// path, else cmd.exe in the system directory.
func comSpec() (string, error) {
	if p := os.Getenv("ComSpec"); p != "" && filepath.IsAbs(p) && !strings.Contains(p, `"`) {
		return p, nil
	}
	dir, err := windows.GetSystemDirectory()
	if err != nil {
		return "", fmt.Errorf("-c: %s is not an absolute path and the system directory, where cmd.exe is, cannot be found: %w", "%ComSpec%", err)
	}
	if !filepath.IsAbs(dir) {
		return "", errors.New("-c: %ComSpec% is not an absolute path and the system directory " + dir + " is not one either: refusing to look for cmd.exe elsewhere")
	}
	return filepath.Join(dir, "cmd.exe"), nil
}

// cmdExeLine is the command line of a -c command (shellArgv's argv):
// the interpreter quoted, then `/d /s /c "<string>"` with the string as
// given.
func cmdExeLine(argv []string) string {
	return `"` + argv[0] + `" ` + strings.Join(argv[1:len(argv)-1], " ") + ` "` + argv[len(argv)-1] + `"`
}
