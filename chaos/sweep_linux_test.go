//go:build linux && !exactfs_portable

package chaos

// sweepsResidue: the next holder removes the staging files of writers
// killed during the durable write, because the kernel tells it that no
// process has them open (the lease probe, statelock's residue sweep).
const sweepsResidue = true
