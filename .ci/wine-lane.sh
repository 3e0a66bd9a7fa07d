#!/usr/bin/env bash
# The Wine lane: the module's Windows tests, run on Linux under Wine 8.
#
#   bash .ci/wine-lane.sh [package patterns]     (default: ./...; from anywhere)
#
# Installs what it needs with apt-get (idempotent: wine64 and the MinGW C
# compiler), builds .ci/wine/bcryptprimitives.c into a shim DLL, makes a
# fresh Wine prefix in a scratch directory, cross-compiles the test binary
# of every package that has tests for windows/amd64, runs each one from its
# package directory with -test.v (output to a file), and prints one
# "N passed, N failed, N skipped" line per package and one in total.
# It fails when a test fails, when a binary exits non-zero, crashes or runs
# no test, or when a test listed in .ci/wine/expected-failures passes or
# fails for another reason than the one listed.
#
# What Wine 8 cannot show (reparse points, POSIX delete and rename
# semantics, DACL persistence, durability) is listed in README.md, and test
# by test in .ci/wine/needs-real-windows.md; those tests skip under Wine
# (saying why) and need a real Windows machine.
#
# When the packages include cmd/exactfs (as ./... does), the lane then
# builds exactfs.exe and runs `exactfs demo` under Wine with the opt-in
# (EXACTFS_WINDOWS=unverified): workers contending on one state file, then
# the chaos variants, whose kills are TerminateProcess. It prints each
# demo's table and fails when a demo exits non-zero or its table shows a
# lost or duplicated update, an overlap, or a count other than expected.
# Sizes are small because under Wine a process takes up to a second to
# start and an update a few hundred milliseconds (see demo_step below).
#
# Environment: EXACTFS_WINE_KEEP=1 keeps the scratch directory (prefix,
# binaries, logs, a failed demo's files) and prints its path;
# EXACTFS_WINE_TIMEOUT is the limit per test binary in seconds (default
# 900); EXACTFS_WINE_DEMO_SEED repeats a chaos schedule (the lane prints
# the seed it used).
#
# Three things Wine 8 needs that real Windows does not:
#  - Go 1.26 binaries load ProcessPrng from bcryptprimitives.dll at start-up
#    and abort without it; Wine 8 has no such DLL. Go loads it from system32
#    only (the binary's directory and PATH are not searched), so the shim is
#    copied into the scratch prefix's system32.
#  - Go's os.RemoveAll (so every t.TempDir cleanup) first tries
#    FileDispositionInformationEx, which Wine 8 answers with
#    STATUS_NOT_IMPLEMENTED, an answer Go's fallback to the legacy delete
#    does not expect: "unlinkat ...: Invalid function". The lane compiles the
#    tests with -overlay over a copy of that one toolchain file whose
#    fallback also accepts STATUS_NOT_IMPLEMENTED. It stops, loudly, if a
#    new Go release changes the text it patches.
#  - Wine's helper processes inherit stdout and keep a pipe open after the
#    test binary exits, so output goes to files, never through a pipe, and
#    the wineserver is killed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH:/usr/local/sbin:/usr/sbin:/sbin"
export DEBIAN_FRONTEND=noninteractive

WINE_PACKAGES=(
	wine64                      # the 64-bit loader and DLLs (no recommends: no 32-bit side, no fonts)
	gcc-mingw-w64-x86-64-win32  # x86_64-w64-mingw32-gcc, for the ProcessPrng shim
)
TIMEOUT=${EXACTFS_WINE_TIMEOUT:-900}
EXPECTED=.ci/wine/expected-failures
MODULE=$(go list -m)

WORK=$(mktemp -d "${TMPDIR:-/tmp}/exactfs-wine.XXXXXX")
export WINEPREFIX=$WORK/prefix WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
WINE=""
WINESERVER=""

finish() {
	if [ -n "$WINESERVER" ]; then
		"$WINESERVER" -k >/dev/null 2>&1 || true
		"$WINESERVER" -w >/dev/null 2>&1 || true
	fi
	if [ "${EXACTFS_WINE_KEEP:-}" = 1 ]; then
		echo "kept the scratch directory: $WORK"
	else
		rm -rf "$WORK"
	fi
}
trap finish EXIT

secs() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

retry() {
	local i
	for i in 1 2 3; do
		"$@" && return 0
		echo "retrying in $((i * 10))s: $*" >&2
		sleep $((i * 10))
	done
	return 1
}

install_packages() {
	local p missing=()
	for p in "${WINE_PACKAGES[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
	done
	if [ ${#missing[@]} -gt 0 ]; then
		echo "installing ${missing[*]}"
		retry apt-get update -qq || return 1
		retry apt-get install -y -qq --no-install-recommends "${missing[@]}" </dev/null >"$WORK/apt.log" 2>&1 ||
			{ tail -50 "$WORK/apt.log"; return 1; }
	fi
	# Debian's wine64 puts its loader in /usr/lib/wine; the wine and wine64
	# wrappers in /usr/bin come with the "wine" package, not needed here.
	local d
	for d in /usr/lib/wine /usr/lib/x86_64-linux-gnu/wine; do
		if [ -x "$d/wine64" ]; then
			WINE=$d/wine64
			WINESERVER=$d/wineserver
			break
		fi
	done
	if [ -z "$WINE" ] && command -v wine64 >/dev/null; then
		WINE=$(command -v wine64)
		WINESERVER=$(command -v wineserver)
	fi
	[ -n "$WINE" ] && [ -x "$WINESERVER" ] || { echo "no wine64 loader or wineserver after installing ${WINE_PACKAGES[*]}"; return 1; }
	command -v x86_64-w64-mingw32-gcc >/dev/null || { echo "no x86_64-w64-mingw32-gcc after installing ${WINE_PACKAGES[*]}"; return 1; }
	echo "$("$WINE" --version), $(x86_64-w64-mingw32-gcc --version | head -1), $(go version)"
}

make_prefix() {
	x86_64-w64-mingw32-gcc -shared -O2 -Wall -Wextra -Werror -o "$WORK/bcryptprimitives.dll" \
		.ci/wine/bcryptprimitives.c .ci/wine/bcryptprimitives.def -ladvapi32 || return 1
	"$WINE" wineboot -i >"$WORK/wineboot.log" 2>&1 || { cat "$WORK/wineboot.log"; return 1; }
	"$WINESERVER" -w
	local sys32=$WINEPREFIX/drive_c/windows/system32
	[ -d "$sys32" ] || { echo "wineboot made no $sys32"; cat "$WORK/wineboot.log"; return 1; }
	cp "$WORK/bcryptprimitives.dll" "$sys32/"
}

# make_overlay writes $WORK/overlay.json: the toolchain's Deleteat with
# STATUS_NOT_IMPLEMENTED added to its fallback cases (see the top).
make_overlay() {
	local src out anchor n
	src=$(go env GOROOT)/src/internal/syscall/windows/at_windows.go
	out=$WORK/at_windows.go
	anchor="case STATUS_INVALID_INFO_CLASS, // the operating system doesn't support FileDispositionInformationEx"
	[ -f "$src" ] || { echo "no $src: the lane's RemoveAll patch needs updating for $(go version)"; return 1; }
	n=$(grep -cF "$anchor" "$src" || true)
	if [ "$n" != 1 ]; then
		echo "$src: found \"$anchor\" $n times, expected once:"
		echo "the lane's RemoveAll patch needs updating for $(go version)"
		return 1
	fi
	awk -v anchor="$anchor" '
		index($0, anchor) {
			print "\tcase NTStatus(0xC0000002): // STATUS_NOT_IMPLEMENTED: Wine 8 (added by .ci/wine-lane.sh)"
			print "\t\treturn deleteatFallback(h)"
		}
		{ print }' "$src" >"$out"
	printf '{"Replace":{"%s":"%s"}}\n' "$src" "$out" >"$WORK/overlay.json"
}

# The packages with tests for windows/amd64: "importpath dir" lines.
list_packages() {
	GOOS=windows GOARCH=amd64 go list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}} {{.Dir}}{{end}}' "$@"
}

# binname IMPORTPATH: the package's path in the module, / as _ ("root" for the module).
binname() {
	local rel=${1#"$MODULE"}
	rel=${rel#/}
	rel=${rel//\//_}
	echo "${rel:-root}"
}

# count LOG KIND: top-level "--- KIND:" lines (subtests are indented).
count() { grep -c "^--- $2: " "$1" || true; }

# expected_for PKG: the "TestName|reason" lines of $EXPECTED for PKG.
expected_for() {
	[ -f "$EXPECTED" ] || return 0
	awk -v pkg="$1" '!/^[ \t]*(#|$)/ && $1 == pkg { name = $2; $1 = ""; $2 = ""; sub(/^ +/, ""); print name "|" $0 }' "$EXPECTED"
}

# test_output LOG NAME: the lines of top-level test NAME, from its RUN line to its result.
test_output() {
	awk -v name="$2" '
		$0 == "=== RUN   " name { on = 1 }
		on { print }
		on && $0 ~ "^--- (PASS|FAIL|SKIP): " name " " { exit }' "$1"
}

# demo_row LOG ROW: the number in the demo table's row ROW ("" if none).
demo_row() { sed -n "s/^  $2  *\([0-9][0-9]*\).*/\1/p" "$1" | head -1; }

# run_demo NAME ARGS...: exactfs.exe demo ARGS under Wine with the opt-in;
# prints its table and checks it. Returns non-zero on any violation.
run_demo() {
	local name=$1 out=$WORK/logs/demo-$1.out err=$WORK/logs/demo-$1.err rc=0 t0 problems=() row v
	shift
	t0=$(date +%s.%N)
	(cd "$WORK" && env -u CI -u EXACTFS_TEST_STRICT EXACTFS_WINDOWS=unverified timeout -k 30 300 \
		"$WINE" "$WORK/bin/exactfs.exe" demo "$@" >"$out" 2>"$err" </dev/null) || rc=$?
	echo
	echo "=== exactfs demo $* (EXACTFS_WINDOWS=unverified): exit $rc, $(secs "$t0")s"
	sed 's/^/    | /' "$out"
	# stderr: the note that the demo made its own host id (Wine keeps no
	# DACL, so no config root can be owner-only), or the failure.
	[ -s "$err" ] && fold -s -w 100 "$err" | sed 's/^/    stderr: /'
	[ "$rc" -eq 0 ] || problems+=("exited $rc")
	grep -q '^PASS: ' "$out" || problems+=("no PASS line")
	for row in "lost updates" "duplicated updates" "overlapping holds"; do
		v=$(demo_row "$out" "$row")
		[ "$v" = 0 ] || problems+=("$row: ${v:-no such row}, want 0")
	done
	v=$(demo_row "$out" "found in the state file")
	[ -n "$v" ] && [ "$v" = "$(demo_row "$out" "expected updates")" ] ||
		problems+=("found ${v:-no row} updates, expected $(demo_row "$out" "expected updates")")
	if [[ " $* " == *" --chaos=false "* ]]; then
		:
	else
		v=$(demo_row "$out" "workers killed with TerminateProcess")
		[ -n "$v" ] && [ "$v" -gt 0 ] || problems+=("the chaos demo killed ${v:-no} workers")
	fi
	if [ ${#problems[@]} -gt 0 ]; then
		printf '    PROBLEM: %s\n' "${problems[@]}"
		return 1
	fi
}

# demo_step: the demo under Wine (issue 22), when cmd/exactfs is among the
# packages. Sizes, measured under Wine 8 on the 2-core CI machine at load
# 7 to 15: a worker process takes 0.3 to 1 s to start, an uncontended update
# about 0.1 s and a contended one about 1 s (no waiter queue on Windows:
# waiters sleep their backoff), so 3 workers x 8 updates take 15-25 s and
# the chaos run (3 x 10, a kill every 4 updates: about 7 kills, each a
# restart) 10-45 s, as does the same with --kill-anywhere (kills 0-3 ms
# after a worker enters; under Wine, where the transform takes microseconds
# and the durable write about 0.1 s, they land mostly inside the write: in
# four lane runs every such kill came after the holder's exit was logged,
# and one of the 28 after its write had landed, a redone update found
# already written). Three workers keep every worker contending for the lock and a
# killed holder's lock in demand; more would mostly add start-up time.
demo_step() {
	local t0 seed st=0
	t0=$(date +%s.%N)
	if ! GOOS=windows GOARCH=amd64 go build -overlay "$WORK/overlay.json" -o "$WORK/bin/exactfs.exe" ./cmd/exactfs; then
		echo "FAIL: exactfs.exe does not build for windows/amd64"
		return 1
	fi
	seed=${EXACTFS_WINE_DEMO_SEED:-$((RANDOM * 32768 + RANDOM + 1))}
	echo
	echo "=== exactfs demo under Wine (chaos seed $seed; EXACTFS_WINE_DEMO_SEED=$seed repeats its schedule)"
	run_demo plain --workers 3 --updates 8 --chaos=false || st=1
	run_demo chaos --workers 3 --updates 10 --kill-every 4 --seed "$seed" || st=1
	run_demo anywhere --workers 3 --updates 10 --kill-every 4 --kill-anywhere --seed "$seed" || st=1
	echo
	echo "=== exactfs demo under Wine: $([ "$st" -eq 0 ] && echo passed || echo FAILED) in $(secs "$t0")s"
	return $st
}

status=0
step_start=$(date +%s.%N)
install_packages || exit 1
echo "packages: $(secs "$step_start")s"

step_start=$(date +%s.%N)
make_prefix || exit 1
echo "shim + prefix: $(secs "$step_start")s ($(du -sh "$WINEPREFIX" | cut -f1))"

make_overlay || exit 1
mapfile -t packages < <(list_packages "${@:-./...}")
[ ${#packages[@]} -gt 0 ] || { echo "no packages with Windows tests in: ${*:-./...}"; exit 1; }

step_start=$(date +%s.%N)
mkdir -p "$WORK/bin" "$WORK/logs"
for line in "${packages[@]}"; do
	read -r pkg dir <<<"$line"
	name=$(binname "$pkg")
	if ! GOOS=windows GOARCH=amd64 go test -c -overlay "$WORK/overlay.json" -o "$WORK/bin/$name.test.exe" "$pkg"; then
		echo "FAIL $pkg: the test binary does not build for windows/amd64"
		status=1
	fi
done
echo "cross-compile ${#packages[@]} test binaries: $(secs "$step_start")s"

step_start=$(date +%s.%N)
tp=0 tf=0 ts=0 tx=0
summary=()
for line in "${packages[@]}"; do
	read -r pkg dir <<<"$line"
	name=$(binname "$pkg")
	exe=$WORK/bin/$name.test.exe
	log=$WORK/logs/$name.log
	[ -f "$exe" ] || continue
	rc=0
	t0=$(date +%s.%N)
	# CI and EXACTFS_TEST_STRICT are dropped: under Wine there is no Windows
	# node or python3 to find, so testfs.Require skips; the skips are listed below.
	# EXACTFS_WINDOWS (the opt-in) is dropped: each test decides the gate itself.
	(cd "$dir" && env -u CI -u EXACTFS_TEST_STRICT -u EXACTFS_WINDOWS timeout -k 30 "$TIMEOUT" \
		"$WINE" "$exe" -test.v -test.count=1 -test.timeout "$((TIMEOUT - 60))s" >"$log" 2>&1 </dev/null) || rc=$?
	took=$(secs "$t0")
	p=$(count "$log" PASS) f=$(count "$log" FAIL) s=$(count "$log" SKIP)
	problems=()
	xfail=0

	# Expected failures: each must fail, and its output must say why.
	declare -A expected=()
	while IFS='|' read -r tname reason; do
		[ -n "$tname" ] || continue
		expected[$tname]=1
		if grep -q "^--- PASS: $tname " "$log"; then
			problems+=("$tname passed but is listed in $EXPECTED: remove it from the list")
		elif ! grep -q "^--- FAIL: $tname " "$log"; then
			problems+=("$tname (listed in $EXPECTED) did not run")
		elif ! grep -qF -- "$reason" <<<"$(test_output "$log" "$tname")"; then
			# (Not a pipe into grep -q: grep quits at the first match, and
			# under pipefail the writer's SIGPIPE would fail the test.)
			problems+=("$tname failed, but its output does not contain \"$reason\" (the reason in $EXPECTED)")
		else
			xfail=$((xfail + 1))
		fi
	done < <(expected_for "$pkg")
	while read -r failed; do
		[ -n "$failed" ] && [ -z "${expected[$failed]:-}" ] && problems+=("$failed failed")
	done < <(sed -n 's/^--- FAIL: \([^ ]*\) .*/\1/p' "$log")
	unset expected

	if [ $((p + f + s)) -eq 0 ]; then
		problems+=("ran no test (exit $rc)")
	elif [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		problems+=("exited $rc without a failing test: crashed or timed out")
	elif ! tail -3 "$log" | grep -qE '^(PASS|FAIL)$'; then
		problems+=("no final PASS/FAIL line: the binary did not finish (exit $rc)")
	fi

	tp=$((tp + p)) tf=$((tf + f - xfail)) ts=$((ts + s)) tx=$((tx + xfail))
	xnote=""
	[ "$xfail" -gt 0 ] && xnote=" (+ $xfail expected failures, $EXPECTED)"
	summary+=("$(printf '%-45s %s passed, %s failed, %s skipped%s  [%ss]' \
		"$pkg" "$p" "$((f - xfail))" "$s" "$xnote" "$took")")
	echo
	echo "=== $pkg under Wine: $p passed, $((f - xfail)) failed, $s skipped$xnote, exit $rc, ${took}s"
	# Each skip with the first line its test logged (the reason).
	# (A subtest's message comes after its SKIP line, a test's before.)
	awk 'function flush() { if (pending != "") print "    " pending ": " msg; pending = "" }
		/^=== RUN/ { flush(); msg = "" }
		/^ *--- SKIP: / { flush(); pending = $0; sub(/^ +/, "", pending); if (msg != "") flush(); next }
		/^ *--- / { flush(); next }
		/^ +[^ -]/ && msg == "" { msg = $0; sub(/^ +/, "", msg); if (pending != "") flush() }
		END { flush() }' "$log"
	if [ ${#problems[@]} -gt 0 ]; then
		status=1
		printf '    PROBLEM: %s\n' "${problems[@]}"
		echo "    --- last 150 lines of its output:"
		tail -150 "$log" | sed 's/^/    | /'
	fi
done
echo
echo "=== Wine lane: run ${#summary[@]} test binaries in $(secs "$step_start")s"
printf '%s\n' "${summary[@]}"
xnote=""
[ "$tx" -gt 0 ] && xnote=" (+ $tx expected failures)"
echo "total: $tp passed, $tf failed, $ts skipped$xnote"

demo="not run (cmd/exactfs is not among the packages)"
if grep -q "^$MODULE/cmd/exactfs " <<<"$(printf '%s\n' "${packages[@]}")"; then
	if demo_step; then
		demo="passed"
	else
		demo="FAILED"
		status=1
	fi
fi
echo "exactfs demo under Wine: $demo"
[ "$status" -eq 0 ] && echo "Wine lane passed" || echo "Wine lane FAILED"
exit $status
