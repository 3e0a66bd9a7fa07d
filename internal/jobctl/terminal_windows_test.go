package jobctl

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/windows"
)

// The live progress lines go to a console only, and only one that takes
// the escape sequences they write; a log file or a pipe never gets them.
func TestWindowsIsTerminal(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if IsTerminal(f) {
		t.Error("a regular file was taken for a console")
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if IsTerminal(w) {
		t.Error("a pipe was taken for a console")
	}

	// A console of this process's own (the test binary may have none).
	// AllocConsole fails (ERROR_ACCESS_DENIED) when the process has one.
	if ok, _, err := windows.NewLazySystemDLL("kernel32.dll").NewProc("AllocConsole").Call(); ok == 0 && err != windows.ERROR_ACCESS_DENIED {
		t.Skipf("needs a console: AllocConsole: %v", err)
	}
	name, _ := windows.UTF16PtrFromString("CONOUT$")
	h, err := windows.CreateFile(name, windows.GENERIC_READ|windows.GENERIC_WRITE,
		windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE, nil, windows.OPEN_EXISTING, 0, 0)
	if err != nil {
		t.Skipf("needs a console: open CONOUT$: %v", err)
	}
	con := os.NewFile(uintptr(h), "CONOUT$")
	defer con.Close()
	var mode uint32
	if err := windows.GetConsoleMode(h, &mode); err != nil {
		t.Skipf("needs a console: GetConsoleMode on CONOUT$: %v", err)
	}
	// Start from a console without the mode, as an older default is.
	if err := windows.SetConsoleMode(h, mode&^windows.ENABLE_VIRTUAL_TERMINAL_PROCESSING); err != nil {
		t.Skipf("needs a console whose mode can be set: %v", err)
	}
	got := IsTerminal(con)
	if err := windows.GetConsoleMode(h, &mode); err != nil {
		t.Fatal(err)
	}
	vt := mode&windows.ENABLE_VIRTUAL_TERMINAL_PROCESSING != 0
	switch {
	case got && !vt:
		t.Error("a console was taken for a terminal without escape-sequence processing turned on")
	case !got && vt:
		t.Error("a console that took escape-sequence processing was not taken for a terminal")
	case !got:
		t.Skip("this console refuses ENABLE_VIRTUAL_TERMINAL_PROCESSING (older than Windows 10, or Wine): no progress lines, as designed")
	}
}
