//go:build unix

package main

import (
	"os"
	"strings"
	"testing"
)

// TestREADMECommandReference: README's command reference names every
// visible command and every long flag of it, and the exit statuses the
// help lists, so the README cannot fall behind 'exactfs help' as the
// binary grows (issue 20: the demo row listed 4 of 8 flags).
func TestREADMECommandReference(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Skipf("no README beside the module: %v", err)
	}
	readme := string(b)
	start := strings.Index(readme, "## The `exactfs` command")
	if start < 0 {
		t.Fatal("README has no command reference")
	}
	ref := readme[start:]
	if end := strings.Index(ref[3:], "\n## "); end >= 0 {
		ref = ref[:end+3]
	}
	for _, c := range visibleCommands() {
		if !strings.Contains(ref, "`"+c.name) && !strings.Contains(ref, " "+c.name+"`") {
			t.Errorf("the README's command reference does not name %s", c.name)
		}
		for _, f := range flagsOf(c) {
			if len(f.name) > 1 && !strings.Contains(ref, "--"+f.name) {
				t.Errorf("the README's command reference does not document %s --%s", c.name, f.name)
			}
		}
	}
	for _, code := range []string{"| 64 |", "| 65 |", "| 69 |", "| 74 |", "| 75 |", "| 76 |", "| 77 |"} {
		if !strings.Contains(ref, code) {
			t.Errorf("the README's exit statuses lack %s", code)
		}
	}
}
