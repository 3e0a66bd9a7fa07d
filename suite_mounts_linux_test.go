package exactfs

// The suite (suite_test.go, every Unix) on the filesystems Linux can mount
// for a test; off Linux testfs cannot make them, and a strict run would
// fail rather than skip.

import (
	"testing"

	"github.com/exactfs/exactfs/internal/testfs"
)

// TestSuiteOnTmpfs runs the suite on a fresh tmpfs (needs root).
func TestSuiteOnTmpfs(t *testing.T) { runSuite(t, testfs.Tmpfs(t)) }

// TestSuiteOnXFS runs the suite on a loop-mounted xfs image (needs root
// and xfsprogs).
func TestSuiteOnXFS(t *testing.T) { runSuite(t, testfs.LoopXFS(t, 300)) }

// TestSuiteOnExt4 runs the suite on a loop-mounted ext4 image.
func TestSuiteOnExt4(t *testing.T) { runSuite(t, testfs.LoopExt4(t, 64)) }
