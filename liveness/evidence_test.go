package liveness

import (
	"strconv"
	"strings"
	"testing"
)

func TestParseProcStat(t *testing.T) {
	// Fields 3.. of a real line; field 22 (start time) is 4242.
	const tail = "S 0 1 1 0 -1 4194560 1 2 0 0 3 4 0 0 20 0 1 0 4242 1000 200 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0"
	for _, tc := range []struct {
		line  string
		state byte
		start string
	}{
		{"1 (init) " + tail, 'S', "4242"},
		{"77 (a b) " + tail, 'S', "4242"},
		{"77 (x) y) z) " + tail, 'S', "4242"},
		{"77 ()) " + tail, 'S', "4242"},
		{"77 (() " + tail, 'S', "4242"},
		{"77 () 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20) " + tail, 'S', "4242"},
		{"77 (tab\there) " + tail + "\n", 'S', "4242"},
		{"77 (zombie) Z" + tail[1:], 'Z', "4242"},
	} {
		st, err := parseProcStat(tc.line)
		if err != nil || st.State != tc.state || st.StartTime != tc.start {
			t.Errorf("parseProcStat(%q) = %+v, %v; want state %c start %s", tc.line, st, err, tc.state, tc.start)
		}
	}
	for _, line := range []string{
		"",
		"1 init S 1 2",
		"1 (init) " + tail[:strings.Index(tail, "4242")],
		"1 (init) " + strings.Replace(tail, "4242", "-4242", 1),
		"1 (init) " + strings.Replace(tail, "4242", "42a", 1),
		"1 (init) " + strings.Replace(tail, "S", "SS", 1),
		"1 )init( " + tail,
	} {
		if st, err := parseProcStat(line); err == nil {
			t.Errorf("parseProcStat(%q) = %+v, want an error", line, st)
		}
	}
}

// FuzzParseProcStat checks that the parser never panics, that whatever it
// accepts is a single state byte and a decimal start time, and that a line
// built from any command name round-trips.
func FuzzParseProcStat(f *testing.F) {
	f.Add("1 (init) S 0 1 1 0 -1 4194560 1 2 0 0 3 4 0 0 20 0 1 0 4242 1000", "a) (b", uint64(4242))
	f.Add("77 ()) Z 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 9", ")", uint64(0))
	f.Fuzz(func(t *testing.T, line, comm string, start uint64) {
		if st, err := parseProcStat(line); err == nil {
			if st.StartTime == "" || strings.Trim(st.StartTime, "0123456789") != "" {
				t.Fatalf("accepted start time %q", st.StartTime)
			}
			if st.State == ' ' || st.State == '\n' {
				t.Fatalf("accepted state %q", st.State)
			}
		}
		// The kernel truncates comm but never strips ')' or spaces; any
		// bytes may appear in it.
		built := "4242 (" + comm + ") R 0 1 1 0 -1 4194560 1 2 0 0 3 4 0 0 20 0 1 0 " +
			uitoa(start) + " 1000 200\n"
		st, err := parseProcStat(built)
		if err != nil || st.State != 'R' || st.StartTime != uitoa(start) {
			t.Fatalf("parseProcStat(%q) = %+v, %v; want R and %d", built, st, err, start)
		}
	})
}

func uitoa(v uint64) string {
	if v == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for ; v > 0; v /= 10 {
		i--
		b[i] = byte('0' + v%10)
	}
	return string(b[i:])
}

func TestInvalidPidsRefused(t *testing.T) {
	for _, pid := range append([]int{0, -1, -42}, beyondPidT()...) {
		if _, _, err := StartTime(pid); err == nil {
			t.Errorf("StartTime(%d) succeeded", pid)
		}
		if _, err := StartTimeAs(pid, FormatPsUTC); err == nil {
			t.Errorf("StartTimeAs(%d) succeeded", pid)
		}
		if _, err := PidfdIno(pid); err == nil {
			t.Errorf("PidfdIno(%d) succeeded", pid)
		}
		if _, err := PidNS(pid); err == nil {
			t.Errorf("PidNS(%d) succeeded", pid)
		}
		if err := (System{}).Signal(pid); err == nil {
			t.Errorf("Signal(%d) succeeded", pid)
		}
		if _, err := (System{}).Zombie(pid); err == nil {
			t.Errorf("Zombie(%d) succeeded", pid)
		}
	}
}

func TestStartTimeAsUnknownFormat(t *testing.T) {
	if _, err := StartTimeAs(1, "bogus-v9"); err == nil {
		t.Fatal("an unknown format was read")
	}
}

// beyondPidT returns ints that do not fit in pid_t, where int is wider; a
// system call would truncate them to some unrelated pid.
func beyondPidT() []int {
	if strconv.IntSize < 64 {
		return nil
	}
	var big int64 = 1 << 31
	return []int{int(big), int(big<<1 + 1)}
}
