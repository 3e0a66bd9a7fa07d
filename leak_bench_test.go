package exactfs

import "testing"

// BenchmarkOpenDirClose is the cost of a Dir's life, which the leak
// detector's cleanup (armed in OpenDir, cancelled in Close) adds to.
func BenchmarkOpenDirClose(b *testing.B) {
	dir := b.TempDir()
	for b.Loop() {
		d, err := OpenDir(dir)
		if err != nil {
			b.Fatal(err)
		}
		d.Close()
	}
}
