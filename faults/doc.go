// Package faults is a FUSE filesystem that fails chosen calls, and the
// tests that run exactfs on it: EIO (or any errno) from one write, one
// fsync, one rename, one directory fsync, while every other call works, so
// each step of the durable write and of the lock can be failed on its own.
//
// It is a nested module so that the core module keeps golang.org/x/sys as
// its only dependency: the FUSE server is github.com/hanwen/go-fuse/v2, a
// loopback over a directory on a loop-mounted ext4 (internal/testfs), with
// a thin layer that consults the rules of [FS] before each call. The
// kernel's device-mapper (dm-error, dm-flakey) would fail I/O below the
// filesystem instead, but it is not in the kernels this project's machines
// and CI run (no /dev/mapper/control); FUSE is.
//
// The layer keeps no lock state of its own (the kernel handles file locks
// locally, as on a local filesystem), passes no descriptor through (every
// read and write reaches the layer), and caches no attributes or entries,
// so what exactfs sees is the backing filesystem's, call by call.
//
// Run as root (a FUSE mount over a loop mount); elsewhere the tests skip
// with the reason, and in CI they fail instead (testfs.Require).
package faults
