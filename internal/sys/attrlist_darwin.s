// Trampolines to libSystem for attrlist_darwin.go; the same text assembles
// for amd64 and arm64.

#include "textflag.h"

TEXT libc_fgetattrlist_trampoline<>(SB),NOSPLIT,$0-0
	JMP	libc_fgetattrlist(SB)
GLOBL	·libc_fgetattrlist_trampoline_addr(SB), RODATA, $8
DATA	·libc_fgetattrlist_trampoline_addr(SB)/8, $libc_fgetattrlist_trampoline<>(SB)

TEXT libc_fsetattrlist_trampoline<>(SB),NOSPLIT,$0-0
	JMP	libc_fsetattrlist(SB)
GLOBL	·libc_fsetattrlist_trampoline_addr(SB), RODATA, $8
DATA	·libc_fsetattrlist_trampoline_addr(SB)/8, $libc_fsetattrlist_trampoline<>(SB)
