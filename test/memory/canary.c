/*
 * canary.c: proves that test/memory/run.sh sees sanitizer reports.
 *
 * Built with the same -fsanitize flags as the extension into a module of its
 * own (never installed), and called once before the suites:
 *   sb_memcheck_canary(1): signed integer overflow (UndefinedBehaviorSanitizer)
 *   sb_memcheck_canary(2): heap buffer overflow (AddressSanitizer; the backend exits)
 * run.sh checks that both reports appear, then sets them aside.
 */
#include "postgres.h"

#include <limits.h>
#include <stdlib.h>

#include "fmgr.h"

PG_MODULE_MAGIC;

PG_FUNCTION_INFO_V1(sb_memcheck_canary);

Datum sb_memcheck_canary(PG_FUNCTION_ARGS);

Datum
sb_memcheck_canary(PG_FUNCTION_ARGS)
{
	int32 what = PG_GETARG_INT32(0);
	volatile int32 big = INT_MAX;

	if (what == 1)
		PG_RETURN_INT32(big + what);
	if (what == 2)
	{
		char *volatile p = malloc(8);
		char c = p[what + 6];

		free(p);
		PG_RETURN_INT32(c);
	}
	PG_RETURN_INT32(0);
}
