//go:build !unix

package exactfs

import "io/fs"

// umask is 0 on Windows, which has no file mode creation mask: os.WriteFile
// applies none there either.
func umask() fs.FileMode { return 0 }
