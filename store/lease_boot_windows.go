package store

// kernelRuleBoot is the kernel rule's precondition on Windows, where no
// boot id source is adopted (liveness.BootID fails): a record written by
// an exactfs holder on Windows carries an empty boot id, as ours would,
// and only such a record is judged by the lock. A record with a boot id
// was written on Linux (through a share or WSL), whose locks this kernel
// may not see: its absence proves nothing there, and the pid rules apply.
//
// Why the boot and host need no id here: the boot id guards against a
// lock that lives in another kernel's table. On Windows a byte-range lock
// lives with the file: a reboot ends every holder with its locks (no lock
// then, and no holder: Dead is right), and on an SMB share the server
// keeps every client's locks and refuses a conflicting one to any other
// client, so a holder on another machine is seen as Alive. The lease's
// own check (exactfs.LockVisible, once per volume, from a second open) refuses
// the claim on a volume where the holder's lock is not seen.
func kernelRuleBoot(recBoot string) bool { return recBoot == bootID() }
