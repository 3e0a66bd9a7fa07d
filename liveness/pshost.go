package liveness

// startTimeWherePsOnly is the start time a record carries where ps is the
// only reader of start times (macOS: no /proc): UnknownStartTime and no
// format. It is a function of nothing, kept apart from the darwin build so
// that the reasoning below is compiled and tested on every platform
// (pshost_test.go).
//
// Without /proc, a process's start time is the text `ps -o lstart=` prints:
// one-second resolution, spelled in the reader's locale (BSD ps prints it
// with strftime's %c) and time zone. The TypeScript peers that judge our
// records read it in one of two ways:
//
//   - newer builds run ps under LC_ALL=C LANG=C TZ=UTC and compare the
//     exact text (FormatPsUTC is that text);
//   - an older build runs ps in the environment it inherited, so on a Mac
//     whose zone is not UTC, or whose LC_TIME %c is not the C one, its text
//     for a live process is not the pinned one.
//
// Either build calls the live owner of a record another incarnation, and
// so dead and its lock free to take, as soon as it read a start time for
// the pid and that text differs from the recorded one; and either takes
// "unknown" (or an empty string) as no evidence, keeping the record for as
// long as the pid exists. No text satisfies both builds: the pinned one is
// stolen by the older build on most Macs, a local one by the newer build,
// and a process cannot know which zone and locale a peer runs in. So the
// record says "unknown", and both builds keep a live holder.
//
// What it costs: nobody can tell a reused pid from the holder by the record.
// A holder that died is still dead at once by kill(pid, 0) or its zombie
// state, and a record from an earlier boot is dead by its boot id
// (kern.bootsessionuuid); only a dead holder whose pid another process got
// before anyone judged the record is read as alive, until that process
// ends. macOS hands out pids upward to 99,999 before it wraps, so that needs
// the pid space cycled while the lock lies abandoned. exactfs readers
// still compare the FormatPsUTC records of earlier exactfs builds.
func startTimeWherePsOnly() (value, format string) { return UnknownStartTime, "" }
