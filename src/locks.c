/*-------------------------------------------------------------------------
 *
 * locks.c
 *	  The per-key lock's primitives: one transaction-scoped advisory lock
 *	  per key, in a lock-tag class of this extension's own, taken and given
 *	  back; and the SQL functions that show it, sandbox_lock_id and
 *	  sandbox_lock_holder.  Also the lock that orders draws of the fence
 *	  sequence (one per database, in a class of its own; fences.c).
 *	  Waiting for a key (deadlines, claims, backoff, "could not lock") is
 *	  take.c's.
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
 * A key's lock exists on the primary only.  A hot standby would grant its
 * own advisory lock, which excludes nothing on the primary, and its pg_locks
 * shows none of the primary's: taking a key's lock or reporting its holder
 * fails there (25006), at this level, so no caller above can hand out a lock
 * that excludes nothing.
 *
 *-------------------------------------------------------------------------
 */
#include "sandbox_store.h"

#include <limits.h>
#include <math.h>

#include "access/htup_details.h"
#include "access/xlog.h"
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

PG_FUNCTION_INFO_V1(sandbox_lock_id);
PG_FUNCTION_INFO_V1(sandbox_lock_holder);

/* The symbols the 1.4.1 scripts bind (SB_ENTRY_1_4_1). */
SB_ENTRY_1_4_1(sandbox_lock_id)
SB_ENTRY_1_4_1(sandbox_lock_holder)

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

/* What a call on a standby wanted of the key's lock. */
typedef enum SbStandbyRefusal
{
	SB_STANDBY_LOCK,  /* take it */
	SB_STANDBY_HOLDER /* report who holds it */
} SbStandbyRefusal;

/* Taking or reporting a key's lock on a hot standby: 25006. */
SB_NORETURN_BEFORE static void report_on_standby(const text *key,
												 SbStandbyRefusal what) SB_NORETURN_AFTER;

static void
report_on_standby(const text *key, SbStandbyRefusal what)
{
	if (what == SB_STANDBY_HOLDER)
		ereport(
			ERROR,
			(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
			 errmsg("cannot report the holder of sandbox key \"%s\" on a standby",
					text_to_cstring(key)),
			 errdetail("The key's lock is held on the primary, whose locks a standby cannot see."),
			 errhint("Connect to the primary.")));
	ereport(ERROR,
			(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
			 errmsg("cannot lock sandbox key \"%s\" on a standby", text_to_cstring(key)),
			 errdetail("A standby's locks exclude nothing on the primary, where the key is held."),
			 errhint("Connect to the primary.")));
}

static void
set_key_locktag(LOCKTAG *tag, const text *key)
{
	uint64 id = sb_lock_id(key);

	SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, (uint32) (id >> 32), (uint32) id, SB_LOCK_CLASS);
}

/*
 * Take the key's advisory lock for the rest of the transaction: at once or
 * not at all (dont_wait; false when another transaction holds it), or
 * waiting as PostgreSQL's lock manager does (lock_timeout, deadlock
 * detection, cancel).  True when held (also when held by us already).
 * Fails on a standby.
 */
bool
sb_advisory_lock(const text *key, bool dont_wait)
{
	LOCKTAG tag;

	if (RecoveryInProgress())
		report_on_standby(key, SB_STANDBY_LOCK);
	set_key_locktag(&tag, key);
	return LockAcquire(&tag, ExclusiveLock, false, dont_wait) != LOCKACQUIRE_NOT_AVAIL;
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
 * The fence-draw lock: every draw of the fence sequence holds it in
 * ShareLock for the nextval alone; moving the sequence up to a key's fence
 * holds it in ExclusiveLock, so no other draw can run between the value it
 * reads and its setval (fences.c).  Held for moments, never while waiting
 * for anything else; given back at once, not at the transaction's end.
 */
static void
set_fence_draw_locktag(LOCKTAG *tag)
{
	SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, 0, 0, SB_FENCE_LOCK_CLASS);
}

void
sb_fence_draw_lock(LOCKMODE mode)
{
	LOCKTAG tag;

	set_fence_draw_locktag(&tag);
	(void) LockAcquire(&tag, mode, false, false);
}

void
sb_fence_draw_unlock(LOCKMODE mode)
{
	LOCKTAG tag;

	set_fence_draw_locktag(&tag);
	if (!LockRelease(&tag, mode, false))
		elog(ERROR, "sandbox_store fence-draw lock was not held");
}

/* sandbox_lock_id(key text) RETURNS bigint: the lock id pg_locks shows. */
Datum
sandbox_lock_id(PG_FUNCTION_ARGS)
{
	text *key = sb_required_key(fcinfo, 0);

	/* it runs no statement (sb_spi_connect checks for the others) */
	sb_check_library_version();
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
	{OIDOID, OIDOID, OIDOID, INT2OID},
	SPI_OK_SELECT};

/*
 * sandbox_lock_holder(key text) RETURNS int (version 1.1)
 *
 * The pid of the backend whose transaction holds the key's lock, 0 when a
 * prepared transaction holds it, or NULL when nobody does.  (A claim has no
 * backend: see the view sandbox_store.claims.)  Fails on a standby, whose
 * pg_locks would show no holder of a key the primary holds.
 */
Datum
sandbox_lock_holder(PG_FUNCTION_ARGS)
{
	text *key = sb_required_key(fcinfo, 0);
	uint64 id = sb_lock_id(key);
	Datum args[4];
	bool found;
	int32 pid = 0;

	if (RecoveryInProgress())
		report_on_standby(key, SB_STANDBY_HOLDER);
	args[0] = ObjectIdGetDatum(MyDatabaseId);
	args[1] = ObjectIdGetDatum((Oid) (id >> 32));
	args[2] = ObjectIdGetDatum((Oid) (uint32) id);
	args[3] = Int16GetDatum(SB_LOCK_CLASS);

	sb_spi_connect();
	found = sb_spi_execute(&holder_stmt, args, NULL, true, InvalidSnapshot) > 0;
	if (found)
	{
		bool isnull;

		pid =
			DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
		/*
		 * A prepared transaction holds the lock with no backend (pg_locks.pid
		 * is NULL): 0, as pg_blocking_pids reports one.  NULL would say the
		 * key is free.
		 */
		if (isnull)
			pid = 0;
	}
	sb_spi_finish();
	if (!found)
		PG_RETURN_NULL();
	PG_RETURN_INT32(pid);
}
