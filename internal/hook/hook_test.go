package hook

import (
	"sync"
	"testing"
)

func TestSetFireRestore(t *testing.T) {
	var got []string
	Fire("h", "nothing set") // no hook: no effect, no panic
	if IsSet("h") {
		t.Fatal("IsSet before Set")
	}
	r1 := Set("h", func(p string) { got = append(got, "one:"+p) })
	r2 := Set("h", func(p string) { got = append(got, "two:"+p) })
	other := Set("other", func(string) { got = append(got, "other") })
	Fire("h", "a")
	r2() // back to the first
	Fire("h", "b")
	r1() // back to none
	Fire("h", "c")
	if IsSet("h") || !IsSet("other") {
		t.Fatal("IsSet after restore")
	}
	other()
	if IsSet("other") || active.Load() != nil {
		t.Fatal("hooks left after every restore")
	}
	want := []string{"two:a", "one:b"}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("fired %q, want %q", got, want)
	}
}

func TestOnce(t *testing.T) {
	n := 0
	defer Set("h", Once(func(string) { n++ }))()
	for range 3 {
		Fire("h", "")
	}
	if n != 1 {
		t.Fatalf("fired %d times", n)
	}
}

// Fire may run while another goroutine sets and restores hooks (run with
// -race).
func TestConcurrentFireAndSet(t *testing.T) {
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				Fire("h", "")
				IsSet("h")
			}
		}
	})
	for range 1000 {
		Set("h", func(string) {})()
	}
	close(stop)
	wg.Wait()
}
