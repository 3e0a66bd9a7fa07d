//go:build !race

package exactfs

const raceEnabled = false
