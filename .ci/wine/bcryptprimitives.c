/*
 * bcryptprimitives.dll for Wine 8: only ProcessPrng.
 *
 * Go 1.24 and later fill their random numbers (runtime seeds, map hashing,
 * crypto/rand) from ProcessPrng in bcryptprimitives.dll, which Windows has
 * had since Windows 10 and Wine 8 lacks: a Go 1.26 test binary aborts at
 * start-up ("bcryptprimitives.dll not found"). This shim exports
 * ProcessPrng and fills the buffer from RtlGenRandom (advapi32's
 * SystemFunction036), which Wine 8 implements on the host's random source.
 *
 * Built by .ci/wine-lane.sh for the Wine lane only; never shipped.
 */
#include <windows.h>

/* RtlGenRandom: declared by hand, since ntsecapi.h names it through a macro. */
BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

/*
 * ProcessPrng fills pbData with cbData random bytes. Windows documents it as
 * always returning TRUE; on a failure of the underlying source we return
 * FALSE, and Go's runtime then aborts instead of using bytes that are not
 * random.
 */
BOOL WINAPI ProcessPrng(PBYTE pbData, SIZE_T cbData)
{
	while (cbData > 0) {
		ULONG n = cbData > 0x10000000 ? 0x10000000 : (ULONG)cbData;
		if (!SystemFunction036(pbData, n))
			return FALSE;
		pbData += n;
		cbData -= n;
	}
	return TRUE;
}

BOOL WINAPI DllMain(HINSTANCE inst, DWORD reason, LPVOID reserved)
{
	(void)inst;
	(void)reason;
	(void)reserved;
	return TRUE;
}
