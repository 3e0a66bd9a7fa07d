//go:build linux

package exactfs

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// The benchmarks run in EXACTFS_BENCH_DIR if set (point it at the disk you
// care about), else in the test's temporary directory. Each compares an
// exactfs primitive with the plain os sequence that gives the same
// durability without the proofs, in the same run.

func benchDir(b *testing.B) string {
	b.Helper()
	if base := os.Getenv("EXACTFS_BENCH_DIR"); base != "" {
		dir, err := os.MkdirTemp(base, "bench")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(dir) })
		return dir
	}
	return b.TempDir()
}

// osAtomicWrite is the plain durable replace with package os alone: temp
// file in the directory, write, fsync, rename, fsync the directory.
func osAtomicWrite(dir, name string, data []byte) error {
	f, err := os.CreateTemp(dir, "."+name+".tmp")
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), filepath.Join(dir, name)); err != nil {
		os.Remove(f.Name())
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	d.Close()
	return err
}

var data4K = func() []byte {
	b := make([]byte, 4096)
	for i := range b {
		b[i] = byte(i * 31)
	}
	return b
}()

// BenchmarkPublish publishes a new 4 KiB file per operation.
func BenchmarkPublish(b *testing.B) {
	b.Run("exactfs", func(b *testing.B) {
		dir := benchDir(b)
		b.SetBytes(4096)
		for i := 0; b.Loop(); i++ {
			if _, err := Publish(filepath.Join(dir, "f"+strconv.Itoa(i)), data4K, 0o600); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("os", func(b *testing.B) {
		dir := benchDir(b)
		b.SetBytes(4096)
		for i := 0; b.Loop(); i++ {
			if err := osAtomicWrite(dir, "f"+strconv.Itoa(i), data4K); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkWriteFile replaces one 4 KiB file per operation.
func BenchmarkWriteFile(b *testing.B) {
	b.Run("exactfs", func(b *testing.B) {
		dir := benchDir(b)
		p := filepath.Join(dir, "f")
		b.SetBytes(4096)
		for b.Loop() {
			if _, err := WriteFile(p, data4K, 0o600); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("os", func(b *testing.B) {
		dir := benchDir(b)
		b.SetBytes(4096)
		for b.Loop() {
			if err := osAtomicWrite(dir, "f", data4K); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkUnlinkExact removes a 4 KiB file per operation; creating it (and,
// for exactfs, capturing its identity) is not timed. os.Remove makes no
// proof and does not fsync; "os+fsync" adds the directory fsync that makes
// a removal durable.
func BenchmarkUnlinkExact(b *testing.B) {
	setup := func(b *testing.B, p string) {
		b.StopTimer()
		if err := os.WriteFile(p, data4K, 0o600); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.Run("exactfs", func(b *testing.B) {
		dir := benchDir(b)
		p := filepath.Join(dir, "f")
		for b.Loop() {
			setup(b, p)
			b.StopTimer()
			_, id, err := Capture(p)
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if err := UnlinkExact(p, id, ".gjc-delete-q"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("os", func(b *testing.B) {
		dir := benchDir(b)
		p := filepath.Join(dir, "f")
		for b.Loop() {
			setup(b, p)
			if err := os.Remove(p); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("os+fsync", func(b *testing.B) {
		dir := benchDir(b)
		p := filepath.Join(dir, "f")
		for b.Loop() {
			setup(b, p)
			if err := os.Remove(p); err != nil {
				b.Fatal(err)
			}
			d, err := os.Open(dir)
			if err != nil {
				b.Fatal(err)
			}
			if err := d.Sync(); err != nil {
				b.Fatal(err)
			}
			d.Close()
		}
	})
}

// BenchmarkCapture captures a 4 KiB file: the proof every exact operation
// starts with.
func BenchmarkCapture(b *testing.B) {
	dir := benchDir(b)
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, data4K, 0o600); err != nil {
		b.Fatal(err)
	}
	b.Run("exactfs", func(b *testing.B) {
		b.SetBytes(4096)
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := Capture(p); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("os.ReadFile", func(b *testing.B) {
		b.SetBytes(4096)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := os.ReadFile(p); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkRatio interleaves each exactfs primitive with its plain os
// counterpart operation by operation (alternating which goes first), so
// that the load on a shared machine and the state of the journal hit both
// alike. It reports both times per operation and their ratio.
func BenchmarkRatio(b *testing.B) {
	for _, pair := range []struct {
		name   string
		exact  func(dir string, i int) error
		plainF func(dir string, i int) error
	}{
		{"Publish",
			func(dir string, i int) error {
				_, err := Publish(filepath.Join(dir, "x"+strconv.Itoa(i)), data4K, 0o600)
				return err
			},
			func(dir string, i int) error { return osAtomicWrite(dir, "o"+strconv.Itoa(i), data4K) }},
		{"WriteFile",
			func(dir string, i int) error { _, err := WriteFile(filepath.Join(dir, "x"), data4K, 0o600); return err },
			func(dir string, i int) error { return osAtomicWrite(dir, "o", data4K) }},
	} {
		b.Run(pair.name, func(b *testing.B) {
			dir := benchDir(b)
			var exact, plain time.Duration
			n := 0
			for b.Loop() {
				first, second, t1, t2 := pair.exact, pair.plainF, &exact, &plain
				if n%2 == 1 {
					first, second, t1, t2 = pair.plainF, pair.exact, &plain, &exact
				}
				start := time.Now()
				if err := first(dir, n); err != nil {
					b.Fatal(err)
				}
				mid := time.Now()
				if err := second(dir, n); err != nil {
					b.Fatal(err)
				}
				*t1 += mid.Sub(start)
				*t2 += time.Since(mid)
				n++
			}
			b.ReportMetric(float64(exact.Nanoseconds())/float64(n), "exactfs-ns/op")
			b.ReportMetric(float64(plain.Nanoseconds())/float64(n), "os-ns/op")
			b.ReportMetric(float64(exact)/float64(plain), "ratio")
		})
	}
}
