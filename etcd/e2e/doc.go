// Package e2e holds the etcd backend's cluster tests: three-member etcd
// clusters of child processes on 127.0.0.1, killed, paused (SIGSTOP) and
// cut off while the library and the exactfs-etcd command run against them.
//
// The tests build on unix only: they stop, continue and signal processes
// as POSIX does. On Linux every child dies with the test binary
// (Pdeathsig); elsewhere only the tests' cleanups end them.
package e2e
