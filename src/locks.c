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

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "pgstat.h"
#include "nodes/parsenodes.h"
#include "tcop/pquery.h"
#include "storage/latch.h"
#include "utils/wait_event.h"

PG_FUNCTION_INFO_V1(sandbox_lock);
PG_FUNCTION_INFO_V1(sandbox_try_lock);
PG_FUNCTION_INFO_V1(sandbox_lock_id);
PG_FUNCTION_INFO_V1(sandbox_lock_holder);

#define FNV64_OFFSET_BASIS UINT64CONST(0xcbf29ce484222325)
#define FNV64_PRIME        UINT64CONST(0x100000001b3)

/* Longest sleep between two looks at a claim someone else holds. */
#define SB_MAX_POLL_MS 50

/* A wait longer than this (about 100 years) waits as long as the session allows. */
#define SB_MAX_WAIT_DAYS 36500

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

/*
 * How long a caller may wait: wait NULL is bounded only by the session
 * (lock_timeout, statement_timeout, cancel); otherwise until now + wait, or
 * now + lock_timeout if that is sooner.  A wait longer than SB_MAX_WAIT_DAYS
 * (months count 30 days) is as good as forever.
 */
SbWait
sb_wait_from(const Interval *wait)
{
	SbWait w;
	TimestampTz current = GetCurrentTimestamp();
	bool forever = true;

	w.wait = wait;
	w.deadline = current;
	w.by_lock_timeout = false;
	if (wait != NULL)
	{
		double usecs = (double) wait->time + (double) wait->day * USECS_PER_DAY +
					   (double) wait->month * DAYS_PER_MONTH * USECS_PER_DAY;

		if (usecs <= (double) SB_MAX_WAIT_DAYS * USECS_PER_DAY)
		{
			w.deadline = current + (int64) usecs;
			forever = false;
		}
	}
	if (LockTimeout > 0)
	{
		TimestampTz by_lock_timeout = TimestampTzPlusMilliseconds(current, LockTimeout);

		if (forever || by_lock_timeout < w.deadline)
		{
			w.deadline = by_lock_timeout;
			w.by_lock_timeout = true;
		}
		forever = false;
	}
	w.bounded = !forever;
	return w;
}

/* Milliseconds left before the deadline, rounded up; 0 when it has passed. */
static int
ms_left(const SbWait *wait)
{
	TimestampTz current = GetCurrentTimestamp();
	int64 usecs = wait->deadline - current;

	if (usecs <= 0)
		return 0;
	return usecs / 1000 >= INT_MAX ? INT_MAX : (int) ((usecs + 999) / 1000);
}

/* Which limit ended a wait, for the messages below. */
static char *
wait_limit(const SbWait *wait)
{
	if (wait->by_lock_timeout || wait->wait == NULL)
		return psprintf("lock_timeout (%s)", GetConfigOptionByName("lock_timeout", NULL, false));
	return psprintf("the wait (%s)", DatumGetCString(DirectFunctionCall1(
										 interval_out, IntervalPGetDatum(wait->wait))));
}

/*
 * The key could not be taken within the wait: 55P03, saying which limit
 * (the wait argument or lock_timeout, whichever came first) ended it.
 */
void
sb_report_not_obtained(const text *key, const SbWait *wait, const SbClaim *claim)
{
	const char *hint = wait->by_lock_timeout || wait->wait == NULL
						   ? "Retry later, or raise lock_timeout."
						   : "Retry later, or pass a longer wait.";

	if (claim)
		ereport(ERROR, (errcode(ERRCODE_LOCK_NOT_AVAILABLE),
						errmsg("could not lock sandbox key \"%s\"", text_to_cstring(key)),
						errdetail("The key is claimed (fence " INT64_FORMAT ") until %s, past %s.",
								  claim->fence, timestamptz_to_str(claim->lease_expires_at),
								  wait_limit(wait)),
						errhint("%s", hint)));
	ereport(ERROR, (errcode(ERRCODE_LOCK_NOT_AVAILABLE),
					errmsg("could not lock sandbox key \"%s\"", text_to_cstring(key)),
					errdetail("Another transaction holds the key's lock, and %s is over.",
							  wait_limit(wait)),
					errhint("%s", hint)));
}

/*
 * Take the key's advisory lock for the rest of the transaction, waiting at
 * most as wait says.  A bounded wait sets lock_timeout for the wait only, in
 * a GUC nest level that is undone on success here and by transaction or
 * subtransaction abort on error, so it never leaks into later statements.
 * Raises 55P03 when not obtained.
 */
void
sb_lock_key(const text *key, const SbWait *wait)
{
	LOCKTAG tag;
	int wait_ms;
	int nest_level;
	char setting[32];
	MemoryContext cxt = CurrentMemoryContext;

	set_key_locktag(&tag, key);

	/* Unbounded, or bounded by lock_timeout alone: PostgreSQL's own wait. */
	if (!wait->bounded || wait->wait == NULL)
	{
		(void) LockAcquire(&tag, ExclusiveLock, false, false);
		return;
	}

	wait_ms = ms_left(wait);
	if (wait_ms == 0)
	{
		if (LockAcquire(&tag, ExclusiveLock, false, true) == LOCKACQUIRE_NOT_AVAIL)
			sb_report_not_obtained(key, wait, NULL);
		return;
	}

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
		sb_report_not_obtained(key, wait, NULL);
	}
	PG_END_TRY();
	AtEOXact_GUC(true, nest_level);
}

/* Take the key's advisory lock if it is free now (or held by us already). */
bool
sb_try_lock_key(const text *key)
{
	LOCKTAG tag;

	set_key_locktag(&tag, key);
	return LockAcquire(&tag, ExclusiveLock, false, true) != LOCKACQUIRE_NOT_AVAIL;
}

/* Give back one acquisition of the key's advisory lock (to wait for a claim). */
void
sb_unlock_key(const text *key)
{
	LOCKTAG tag;

	set_key_locktag(&tag, key);
	if (!LockRelease(&tag, ExclusiveLock, false))
		elog(ERROR, "sandbox key lock was not held");
}

/*
 * Sleep on the latch before looking at a claim again: *delay_ms, doubled for
 * the next time up to SB_MAX_POLL_MS, cut short by the wait's deadline and
 * by wake_by (when the claim expires).  Interruptible: cancel,
 * statement_timeout and postmaster death end it.
 */
void
sb_sleep_until(const SbWait *wait, int *delay_ms, TimestampTz wake_by)
{
	long timeout = *delay_ms;
	TimestampTz current = GetCurrentTimestamp();

	if (wake_by > current && (wake_by - current) / 1000 + 1 < timeout)
		timeout = (wake_by - current) / 1000 + 1;
	if (wait->bounded && ms_left(wait) < timeout)
		timeout = ms_left(wait);
	if (timeout > 0)
	{
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, timeout,
						 PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
	CHECK_FOR_INTERRUPTS();
	*delay_ms = Min(*delay_ms * 2, SB_MAX_POLL_MS);
}

/*
 * A transaction-scoped lock is useless in a WITH HOLD cursor: PostgreSQL runs
 * such a cursor's query to the end while the transaction commits, so the
 * lock would end before the caller saw the result (and sandbox_ensure would
 * answer create without its outside-a-transaction WARNING).  Lock-mode calls
 * refuse to run there.
 */
void
sb_check_lock_scope(const char *fname)
{
	if (ActivePortal != NULL && (ActivePortal->cursorOptions & CURSOR_OPT_HOLD))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s cannot run in a WITH HOLD cursor", fname),
				 errdetail("A WITH HOLD cursor's query runs while its transaction commits, which "
						   "ends the key's lock before the result is read."),
				 errhint("Call it in a plain statement inside the transaction, or pass a lease.")));
}

/* sandbox_lock(key text, wait interval DEFAULT NULL) RETURNS void */
Datum
sandbox_lock(PG_FUNCTION_ARGS)
{
	text *key = sb_required_text(fcinfo, 0, "key");
	Interval *wait_arg = sb_optional_interval(fcinfo, 1, "wait");
	SbWait wait = sb_wait_from(wait_arg);

	sb_check_lock_scope("sandbox_lock");
	sb_acquire_key(key, &wait);
	PG_RETURN_VOID();
}

/* sandbox_try_lock(key text) RETURNS boolean */
Datum
sandbox_try_lock(PG_FUNCTION_ARGS)
{
	text *key = sb_required_text(fcinfo, 0, "key");
	SbClaim claim;

	sb_check_lock_scope("sandbox_try_lock");
	if (!sb_try_lock_key(key))
		PG_RETURN_BOOL(false);
	if (!sb_key_free(key, &claim))
	{
		sb_unlock_key(key);
		PG_RETURN_BOOL(false);
	}
	PG_RETURN_BOOL(true);
}

/* sandbox_lock_id(key text) RETURNS bigint: the lock id pg_locks shows. */
Datum
sandbox_lock_id(PG_FUNCTION_ARGS)
{
	text *key = sb_required_text(fcinfo, 0, "key");

	PG_RETURN_INT64((int64) sb_lock_id(key));
}

/* The granted lock of a key, as pg_locks shows it. */
static SbStatement holder_stmt = {
	"SELECT pid FROM pg_catalog.pg_locks"
	" WHERE locktype OPERATOR(pg_catalog.=) 'advisory' AND granted"
	" AND database OPERATOR(pg_catalog.=) $1 AND classid OPERATOR(pg_catalog.=) $2"
	" AND objid OPERATOR(pg_catalog.=) $3 AND objsubid OPERATOR(pg_catalog.=) $4"
	" LIMIT 1",
	4,
	{OIDOID, OIDOID, OIDOID, INT2OID}};

/*
 * sandbox_lock_holder(key text) RETURNS int (version 1.1)
 *
 * The pid of the backend whose transaction holds the key's lock, 0 when a
 * prepared transaction holds it, or NULL when nobody does.  (A claim has no
 * backend: see the view sandbox_store.claims.)
 */
Datum
sandbox_lock_holder(PG_FUNCTION_ARGS)
{
	text *key = sb_required_text(fcinfo, 0, "key");
	uint64 id = sb_lock_id(key);
	Datum args[4];
	bool found;
	int32 pid = 0;

	args[0] = ObjectIdGetDatum(MyDatabaseId);
	args[1] = ObjectIdGetDatum((Oid) (id >> 32));
	args[2] = ObjectIdGetDatum((Oid) (uint32) id);
	args[3] = Int16GetDatum(SB_LOCK_CLASS);

	SPI_connect();
	found = sb_spi_execute(&holder_stmt, args, NULL, true, InvalidSnapshot) > 0;
	if (found)
	{
		bool isnull;

		pid = DatumGetInt32(heap_getattr(SPI_tuptable->vals[0], 1, SPI_tuptable->tupdesc, &isnull));
		/*
		 * A prepared transaction holds the lock with no backend (pg_locks.pid
		 * is NULL): 0, as pg_blocking_pids reports one.  NULL would say the
		 * key is free.
		 */
		if (isnull)
			pid = 0;
	}
	SPI_finish();
	if (!found)
		PG_RETURN_NULL();
	PG_RETURN_INT32(pid);
}
