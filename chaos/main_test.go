package chaos

import (
	"fmt"
	"os"
	"testing"
)

// roleEnv selects, in a re-executed test binary, the worker it runs instead
// of the tests.
const roleEnv = "EXACTFS_CHAOS_ROLE"

func TestMain(m *testing.M) {
	switch os.Getenv(roleEnv) {
	case "":
		os.Exit(m.Run())
	case "go":
		if err := goWorker(); err != nil {
			fmt.Fprintln(os.Stderr, "chaos go worker:", err)
			os.Exit(1)
		}
		os.Exit(0)
	default:
		fmt.Fprintln(os.Stderr, "unknown role", os.Getenv(roleEnv))
		os.Exit(2)
	}
}
