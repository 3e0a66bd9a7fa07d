//go:build unix

package jsstr

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/exactfs/exactfs/internal/testfs"
)

// Unix only: the Windows lane runs under Wine, without node.

// The strings where JSON.stringify and encoding/json differ, and every
// escape, agree with node's JSON.stringify byte for byte.
func TestMatchesNode(t *testing.T) {
	node := testfs.RequireCommand(t, "node")
	in := []string{"", "plain", `a"b\c`, "\b\f\n\r\t", "\x00\x01\x1f\x7f", "<script>&amp;</script>",
		"\u2028\u2029", "é ü ß", "日本語", "😀 \U0010ffff", "\ufffd", "tab\tend", "/slash/"}
	for r := rune(0); r < 0x80; r++ {
		in = append(in, "x"+string(r)+"y")
	}
	arg, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, "-e", `
let s = ''; process.stdin.on('data', d => s += d).on('end', () =>
  process.stdout.write(JSON.parse(s).map(x => JSON.stringify(x)).join('\n')));`)
	cmd.Stdin = bytes.NewReader(arg)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	want := strings.Split(string(out), "\n")
	if len(want) != len(in) {
		t.Fatalf("node wrote %d lines for %d strings", len(want), len(in))
	}
	for i, s := range in {
		if got := string(Append(nil, s)); got != want[i] {
			t.Errorf("%q: got %s, JSON.stringify %s", s, got, want[i])
		}
	}
}
