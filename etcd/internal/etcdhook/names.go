// Package etcdhook names the test seams (package internal/hook) of the
// etcd backend's lock calls, so that the e2e tests can cancel a call, or
// pause it, at each step of joining the queue and waiting in it.
package etcdhook

const (
	// QueueAnswered fires (with our queue key) when the transaction that
	// puts our queue key has been answered, before its answer is used.
	QueueAnswered = "etcd.queue-answered"
	// WaitLook fires (with our queue key) before each look for the key
	// ahead of ours while waiting.
	WaitLook = "etcd.wait-look"
	// WaitWatch fires (with our queue key) once the watch on the key ahead
	// of ours is started, before waiting on it.
	WaitWatch = "etcd.wait-watch"
	// ReleaseJudged fires (with the holder's lock key) when ReleaseHolder
	// has judged the holder and found which keys its lease keeps, before it
	// acts: the holder may release the lock right there.
	ReleaseJudged = "etcd.release-judged"
)
