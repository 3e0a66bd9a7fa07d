package etcd

import (
	"strings"
	"testing"
)

// TestParseMetaEmpty: the empty value that etcdctl lock and
// concurrency.Mutex put is named as theirs (it read "unexpected end of JSON
// input").
func TestParseMetaEmpty(t *testing.T) {
	_, err := parseMeta(nil)
	if err == nil || !strings.Contains(err.Error(), "etcdctl lock") {
		t.Errorf("parseMeta(empty): %v", err)
	}
	if m, err := parseMeta([]byte(`{"pid":42,"host":"h"}`)); err != nil || m.Pid != 42 {
		t.Errorf("parseMeta: %+v, %v", m, err)
	}
}
