/*-------------------------------------------------------------------------
 *
 * locks.c
 *	  The per-key lock: one transaction-scoped advisory lock per key, in a
 *	  lock-tag class of this extension's own, and the SQL functions
 *	  sandbox_lock, sandbox_try_lock and sandbox_lock_id.
 *
 * A key maps to a 64-bit FNV-1a hash of its bytes.  The hash is part of the
 * extension's contract (sandbox_lock_id shows it and pg_locks is searched
 * with it), so it must never change: it depends on nothing but the bytes.
 * Two keys with the same hash share a lock, which costs waiting, never a
 * wrong answer: the table's primary key decides which row a call sees.
 *
 * Locks are only ever taken transaction-scoped (sessionLock = false): they
 * end with the caller's transaction, whether it commits, aborts or its
 * connection dies, and nothing survives into a pooled connection's next
 * client.
 *
 *-------------------------------------------------------------------------
 */
#include "sandbox_store.h"

#include <limits.h>
#include <math.h>

#include "fmgr.h"
#include "miscadmin.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "utils/builtins.h"
#include "utils/guc.h"

PG_FUNCTION_INFO_V1(sandbox_lock);
PG_FUNCTION_INFO_V1(sandbox_try_lock);
PG_FUNCTION_INFO_V1(sandbox_lock_id);

#define FNV64_OFFSET_BASIS UINT64CONST(0xcbf29ce484222325)
#define FNV64_PRIME        UINT64CONST(0x100000001b3)

/* The stable 64-bit lock id of a key: FNV-1a over its bytes. */
uint64
sb_lock_id(const text *key)
{
	const unsigned char *p = (const unsigned char *) VARDATA_ANY(key);
	const unsigned char *end = p + VARSIZE_ANY_EXHDR(key);
	uint64 hash = FNV64_OFFSET_BASIS;

	for (; p < end; p++)
	{
		hash ^= *p;
		hash *= FNV64_PRIME;
	}
	return hash;
}

static void
set_key_locktag(LOCKTAG *tag, const text *key)
{
	uint64 id = sb_lock_id(key);

	SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, (uint32) (id >> 32), (uint32) id, SB_LOCK_CLASS);
}

/* Milliseconds for lock_timeout: rounded up, so a positive wait is >= 1. */
static int
wait_to_ms(const Interval *wait)
{
	double usecs = (double) wait->time + (double) wait->day * USECS_PER_DAY +
				   (double) wait->month * DAYS_PER_MONTH * USECS_PER_DAY;
	double ms = ceil(usecs / 1000.0);

	return ms > INT_MAX ? INT_MAX : (int) ms;
}

static char *
key_for_message(const text *key)
{
	return text_to_cstring(key);
}

static void
report_not_obtained(const text *key, const Interval *wait)
{
	ereport(ERROR,
			(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
			 errmsg("could not lock sandbox key \"%s\"", key_for_message(key)),
			 wait_to_ms(wait) == 0
				 ? errdetail("Another transaction holds the key's lock, and wait is 0.")
				 : errdetail(
					   "Another transaction held the key's lock for longer than wait (%s).",
					   DatumGetCString(DirectFunctionCall1(interval_out, IntervalPGetDatum(wait)))),
			 errhint("Retry later, or pass a longer wait.")));
}

/*
 * Take the key's lock for the rest of the transaction.
 *
 * wait NULL: wait as long as the session allows (lock_timeout,
 * statement_timeout, deadlock detection, cancel).  A zero wait: do not wait.
 * Otherwise wait at most that long (or less, if lock_timeout is shorter):
 * lock_timeout is set for the wait only, in a GUC nest level that is undone
 * on success here and by transaction or subtransaction abort on error, so it
 * never leaks into later statements.  Raises 55P03 when not obtained.
 */
void
sb_lock_key(const text *key, const Interval *wait)
{
	LOCKTAG tag;
	int wait_ms;
	int nest_level;
	char setting[32];
	MemoryContext cxt = CurrentMemoryContext;

	set_key_locktag(&tag, key);

	if (wait == NULL)
	{
		(void) LockAcquire(&tag, ExclusiveLock, false, false);
		return;
	}

	wait_ms = wait_to_ms(wait);
	if (wait_ms == 0)
	{
		if (LockAcquire(&tag, ExclusiveLock, false, true) == LOCKACQUIRE_NOT_AVAIL)
			report_not_obtained(key, wait);
		return;
	}

	if (LockTimeout > 0 && LockTimeout < wait_ms)
		wait_ms = LockTimeout;
	snprintf(setting, sizeof(setting), "%d", wait_ms);

	nest_level = NewGUCNestLevel();
	(void) set_config_option("lock_timeout", setting, PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE,
							 true, 0, false);
	PG_TRY();
	{
		(void) LockAcquire(&tag, ExclusiveLock, false, false);
	}
	PG_CATCH();
	{
		ErrorData *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		if (edata->sqlerrcode != ERRCODE_LOCK_NOT_AVAILABLE)
			PG_RE_THROW();
		/* Our timeout fired: say so in the extension's words. */
		FlushErrorState();
		report_not_obtained(key, wait);
	}
	PG_END_TRY();
	AtEOXact_GUC(true, nest_level);
}

/* sandbox_lock(key text, wait interval DEFAULT NULL) RETURNS void */
Datum
sandbox_lock(PG_FUNCTION_ARGS)
{
	text *key = sb_required_text(fcinfo, 0, "key");
	Interval *wait = sb_optional_interval(fcinfo, 1, "wait");

	sb_lock_key(key, wait);
	PG_RETURN_VOID();
}

/* sandbox_try_lock(key text) RETURNS boolean */
Datum
sandbox_try_lock(PG_FUNCTION_ARGS)
{
	text *key = sb_required_text(fcinfo, 0, "key");
	LOCKTAG tag;

	set_key_locktag(&tag, key);
	PG_RETURN_BOOL(LockAcquire(&tag, ExclusiveLock, false, true) != LOCKACQUIRE_NOT_AVAIL);
}

/* sandbox_lock_id(key text) RETURNS bigint: the lock id pg_locks shows. */
Datum
sandbox_lock_id(PG_FUNCTION_ARGS)
{
	text *key = sb_required_text(fcinfo, 0, "key");

	PG_RETURN_INT64((int64) sb_lock_id(key));
}
