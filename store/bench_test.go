//go:build unix

package store

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/exactfs/exactfs"
)

// The cost of the store (binding checks, owner-only verification, fence
// hooks) over the exactfs primitives it is built on:
//
//	go test -run '^$' -bench . -benchtime 300x ./store/

var benchData = []byte(`{"session":"0123456789abcdef","state":"running","counter":12345}`)

func BenchmarkPublish(b *testing.B) {
	b.Run("store", func(b *testing.B) {
		s := newStore(b)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, err := s.Publish("f"+strconv.Itoa(i), benchData); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("exactfs", func(b *testing.B) {
		d, err := exactfs.OpenDir(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		defer d.Close()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, err := d.Publish("f"+strconv.Itoa(i), benchData, 0o600); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkReplaceExpected(b *testing.B) {
	b.Run("store", func(b *testing.B) {
		s := newStore(b)
		id, err := s.Publish("f", benchData)
		if err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if id, err = s.ReplaceExpected("f", benchData, id); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("exactfs", func(b *testing.B) {
		d, err := exactfs.OpenDir(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		defer d.Close()
		if _, err := d.Publish("f", benchData, 0o600); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			// Capture, as a caller of the primitive must, to learn the
			// identity to compare against.
			_, id, err := d.Capture("f")
			if err != nil {
				b.Fatal(err)
			}
			if _, err = d.ReplaceExpected("f", benchData, id); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkLeaseAcquireRelease(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "locks")
	for i := 0; i < b.N; i++ {
		l, err := AcquireLease(context.Background(), dir, "bench", CreateLocksDir())
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Release(); err != nil {
			b.Fatal(err)
		}
	}
}
