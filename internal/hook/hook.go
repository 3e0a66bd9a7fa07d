// Package hook holds named test seams at race windows.
//
// Production code calls Fire at a window (between a check and a use, between
// two syscalls of a multi-step mutation). With no hook set, Fire costs one
// atomic load. Tests set a hook to swap a file, plant a successor or kill the
// process exactly there, which turns a race that would need luck into a
// deterministic test. Hooks are process-global and meant only for tests; the
// public API never exposes them.
package hook

import (
	"sync"
	"sync/atomic"
)

var (
	mu     sync.Mutex
	active atomic.Pointer[map[string]func(path string)]
)

// Fire runs the hook registered under name, if any, with the path the caller
// is working on.
func Fire(name, path string) {
	m := active.Load()
	if m == nil {
		return
	}
	if f := (*m)[name]; f != nil {
		f(path)
	}
}

// IsSet reports whether a hook is registered under name. It lets a test
// switch a code path (force a fallback) without a global option.
func IsSet(name string) bool {
	m := active.Load()
	return m != nil && (*m)[name] != nil
}

// Set registers f under name and returns a function that restores the
// previous hook. Passing a nil f removes the hook.
func Set(name string, f func(path string)) (restore func()) {
	mu.Lock()
	defer mu.Unlock()
	prev := swap(name, f)
	return func() {
		mu.Lock()
		defer mu.Unlock()
		swap(name, prev)
	}
}

// swap installs f under name in a fresh copy of the map (readers never see a
// map that is being written) and returns what was there. mu must be held.
func swap(name string, f func(string)) func(string) {
	next := map[string]func(string){}
	var prev func(string)
	if m := active.Load(); m != nil {
		for k, v := range *m {
			next[k] = v
		}
		prev = (*m)[name]
	}
	if f == nil {
		delete(next, name)
	} else {
		next[name] = f
	}
	if len(next) == 0 {
		active.Store(nil)
	} else {
		active.Store(&next)
	}
	return prev
}

// Once returns a hook function that calls f only the first time it fires.
func Once(f func(path string)) func(path string) {
	var once sync.Once
	return func(path string) { once.Do(func() { f(path) }) }
}
