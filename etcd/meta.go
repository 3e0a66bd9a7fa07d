package etcd

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/exactfs/exactfs/liveness"
)

// Meta is the holder metadata, the JSON value of a lock key: who queued
// it, from where, since when, and the evidence package liveness judges a
// process by.
type Meta struct {
	Pid             int       `json:"pid"`
	Host            string    `json:"host,omitempty"` // host name, for people
	HostID          string    `json:"host_id,omitempty"`
	Since           time.Time `json:"since"` // when it queued for the lock: a holder that waited has held it for less
	StartTime       string    `json:"start_time,omitempty"`
	StartTimeFormat string    `json:"start_time_format,omitempty"`
	BootID          string    `json:"boot_id,omitempty"`
	PidfdIno        uint64    `json:"pidfd_ino,omitempty"`
	PidNS           uint64    `json:"pid_ns,omitempty"`
}

func (c *Client) meta() *Meta {
	e := c.self
	return &Meta{
		Pid:             e.Pid,
		Host:            c.name,
		HostID:          c.host.ID,
		Since:           time.Now().UTC(),
		StartTime:       e.StartTime,
		StartTimeFormat: e.StartTimeFormat,
		BootID:          e.BootID,
		PidfdIno:        e.PidfdIno,
		PidNS:           e.PidNS,
	}
}

func (m *Meta) encode() []byte {
	b, _ := json.Marshal(m)
	return b
}

// parseMeta reads a lock key's value.
func parseMeta(b []byte) (*Meta, error) {
	if len(b) == 0 {
		return nil, fmt.Errorf("lock key value is empty, as etcdctl lock and concurrency.Mutex write theirs: a holder that is not exactfs, with no pid to judge")
	}
	var m Meta
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("lock key value is not holder metadata: %w", err)
	}
	if m.Pid <= 0 {
		return nil, fmt.Errorf("lock key value names no pid: %q", b)
	}
	return &m, nil
}

// owner is the metadata as liveness judges it.
func (m *Meta) owner() liveness.Owner {
	return liveness.Owner{
		Pid: m.Pid, StartTime: m.StartTime, StartTimeFormat: m.StartTimeFormat,
		HostID: m.HostID, BootID: m.BootID, PidfdIno: m.PidfdIno, PidNS: m.PidNS,
	}
}

// Describe is one line for people: "pid 4242 on web-1 since 10:02:03".
func (m *Meta) Describe() string {
	host := m.Host
	if host == "" {
		host = "an unnamed host"
	}
	s := fmt.Sprintf("pid %d on %s", m.Pid, host)
	if !m.Since.IsZero() {
		s += fmt.Sprintf(" since %s (%s ago)", m.Since.Local().Format(time.TimeOnly), time.Since(m.Since).Round(time.Second))
	}
	return s
}
