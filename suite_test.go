//go:build unix

package exactfs

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func mkfifo(p string) error { return syscall.Mkfifo(p, 0o600) }

// suite is every test of a primitive that takes the directory to work in,
// so that it runs on the disk of the machine (TestSuite) and again on
// tmpfs, xfs and ext4 (TestSuiteOn*). Each case gets a fresh, empty
// directory.
var suite = []struct {
	name string
	run  func(t *testing.T, dir string)
}{
	{"Publish", testPublish},
	{"PublishExistingDestination", testPublishExistingDestination},
	{"PublishLinkFallback", testPublishLinkFallback},
	{"PublishCrash", testPublishCrash},
	{"PublishStaged", testPublishStaged},
	{"WriteFile", testWriteFile},
	{"WriteFileModeOwner", testWriteFileModeOwner},
	{"WriteFileConcurrentReaders", testWriteFileConcurrentReaders},
	{"WriteFileCrash", testWriteFileCrash},
	{"ReplaceExpected", testReplaceExpected},
	{"ReplaceExpectedMismatch", testReplaceExpectedMismatch},
	{"ReplaceExpectedSuccessorSurvives", testReplaceExpectedSuccessorSurvives},
	{"ReplaceExpectedNeverMissing", testReplaceExpectedNeverMissing},
	{"ReplaceExpectedPredecessorGone", testReplaceExpectedPredecessorGone},
	{"ReplaceExpectedRace", testReplaceExpectedRace},
	{"ReplaceExpectedCrash", testReplaceExpectedCrash},
	{"UnlinkExactRemoves", testUnlinkExactRemoves},
	{"UnlinkExactMismatch", testUnlinkExactMismatch},
	{"UnlinkExactHardLink", testUnlinkExactHardLink},
	{"UnlinkExactQuarantineCollision", testUnlinkExactQuarantineCollision},
	{"UnlinkExactSuccessorSurvives", testUnlinkExactSuccessorSurvives},
	{"UnlinkExactSuccessorAfterDetach", testUnlinkExactSuccessorAfterDetach},
	{"UnlinkExactParentSwapped", testUnlinkExactParentSwapped},
	{"UnlinkExactConcurrentSameFile", testUnlinkExactConcurrentSameFile},
	{"UnlinkExactThreeWay", testUnlinkExactThreeWay},
	{"UnlinkExactTwoSuccessors", testUnlinkExactTwoSuccessors},
	{"UnlinkExactRace", testUnlinkExactRace},
	{"UnlinkExactCrash", testUnlinkExactCrash},
	{"UnlinkExactInvalidQuarantine", testUnlinkExactInvalidQuarantine},
	{"DirUnlinkExact", testDirUnlinkExact},
	{"CaptureTree", testCaptureTree},
	{"RemoveTreeExact", testRemoveTreeExact},
	{"RemoveTreeExactChanged", testRemoveTreeExactChanged},
	{"RemoveTreeExactReplay", testRemoveTreeExactReplay},
}

func runSuite(t *testing.T, root string) {
	for i, c := range suite {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(root, "case"+string(rune('a'+i/26))+string(rune('a'+i%26)))
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			defer os.RemoveAll(dir)
			c.run(t, dir)
		})
	}
}

// TestSuite runs the suite on the filesystem of the test's temporary
// directory.
func TestSuite(t *testing.T) { runSuite(t, t.TempDir()) }
