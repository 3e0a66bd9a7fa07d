//go:build unix

package exactfs

// macNoOFD is doctor's OFD line on macOS (probe_darwin.go), here so that it
// is tested on every Unix against what a darwin record carries: no start
// time (liveness writes "unknown" there, see MACOS.md), so a holder is
// judged by its pid, its zombie state and its boot id.
const macNoOFD = "macOS has no open-file-description locks; a holder is judged by its pid (kill), zombie state and boot id: records written here carry no start time (MACOS.md says why)"
