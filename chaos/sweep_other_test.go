//go:build !linux || exactfs_portable

package chaos

// sweepsResidue: without the lease probe (macOS, the BSDs, the portable
// build) nothing can tell that a staging file's writer is gone (its name
// carries no owner), so the residue sweep, and exactfs recover, keep it
// and report it (SPEC: unknown keeps). The demo then leaves at most one
// staging file per killed worker.
const sweepsResidue = false
