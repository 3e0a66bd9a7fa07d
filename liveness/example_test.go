//go:build unix

package liveness_test

import (
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/exactfs/exactfs/liveness"
)

// Judge the owner named by a record: this process is alive; a record that
// names another host is never judged by a local probe.
func ExampleJudge_Judge() {
	root, _ := os.MkdirTemp("", "liveness-example-")
	defer os.RemoveAll(root)
	host, err := liveness.LoadHostIdentity(filepath.Join(root, "config")) // real callers use DefaultConfigRoot
	if err != nil {
		log.Fatal(err)
	}
	self, err := liveness.Self()
	if err != nil {
		log.Fatal(err)
	}
	j := liveness.Judge{Host: host}
	fmt.Println(j.Judge(self.Owner(host.ID)).Verdict)
	fmt.Println(j.Judge(self.Owner("some-other-host")).Verdict)

	// A process that has exited and been reaped: no such pid.
	child := exec.Command("true")
	if err := child.Run(); err != nil {
		log.Fatal(err)
	}
	gone := liveness.Owner{Pid: child.Process.Pid, StartTime: liveness.UnknownStartTime, HostID: host.ID}
	fmt.Println(j.Judge(gone).Verdict)
	// Output:
	// alive
	// alive
	// dead
}
