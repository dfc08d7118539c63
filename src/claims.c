/*-------------------------------------------------------------------------
 *
 * claims.c
 *	  Lease mode (version 1.1): claims on keys kept as rows of
 *	  sandbox_store.leases, and the fence checks of fenced writes.  The
 *	  only file that reads or writes that table; each new fence comes from
 *	  the fence sequence (fences.c, below).  The SQL functions of lease mode
 *	  are keys.c's, and waiting for a key is take.c's.  Like every helper
 *	  that runs statements, these run in the caller's SPI connection
 *	  (spi.c).
 *
 * A claim gives the exclusion of the key's lock without an open
 * transaction: it is a committed row (key, fence, owner_token,
 * lease_expires_at), taken under the key's advisory lock.  While it is live
 * every other ensure, lock, claim and delete of the key waits for it, by
 * polling on the latch with backoff (there is no transaction to wait on).
 *
 * A key's new fence is drawn from the fence sequence above the key's newest
 * fence and made durable before it leaves the server (fences.c says how),
 * so fences strictly increase per key.  The leases row of a key is never
 * deleted, so it always holds the newest fence the key was given.
 *
 * A fenced write succeeds only if its fence is the key's newest and that
 * claim is still set (live, or expired and not yet taken over): a smaller
 * fence, a fence never given for the key, or the fence of a claim that was
 * released is refused with SB001.  A fence is dead once its claim has
 * ended, whatever ended it.
 *
 * Claims are taken, retired, renewed and released only under the key's
 * advisory lock.  All but one of them keep the lock until they commit; the
 * reaper lets go of each key's lock before its commit (one lock at a time),
 * so under the lock a leases row may still carry the reaper's uncommitted
 * retire.  Every decision under the lock that such a retire could make
 * wrong therefore reads the row locked (read_lease_locked: the fence check,
 * take, retire), or writes it (renew, release: an UPDATE waits for the row
 * and re-reads it), which waits for that transaction and sees what it
 * committed; the unlocked reads (sb_claim_token_set, sb_claim_state) say
 * why they need not.  Expiry is judged by the database server's clock
 * (clock_timestamp()), the one clock every app server shares, and computed
 * in UTC (sb_lease_expiry, clock.c).  When anyone takes over a key whose
 * claim expired (a new claim, or a lock-mode call that retires it), the key
 * gets a new fence, so the old holder is fenced off at once.
 *
 * Lease mode needs the leases table of version 1.1: in a database still at
 * version 1.0 (library upgraded, ALTER EXTENSION UPDATE not yet run) every
 * function behaves as in 1.0.
 *
 *-------------------------------------------------------------------------
 */
#include "sandbox_store.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

/*
 * The columns every statement that returns a claim selects first, in this
 * order (read_claim); claim_probe adds live.
 */
#define CLAIM_COL_FENCE   1
#define CLAIM_COL_TOKEN   2
#define CLAIM_COL_EXPIRES 3
#define CLAIM_COL_LIVE    4

/*
 * The claim statements take the server's clock (clock_timestamp() when the
 * call reads it), the new expiry and the new fence as parameters rather
 * than calling clock_timestamp() or nextval() themselves: citus runs no
 * volatile function in the WHERE of an ON CONFLICT or in an UPDATE of a
 * distributed table.  Same clock, same moment.
 */

/* The key's claim, if a token is set; live tells whether it has not expired. */
static SbStatement claim_probe = {
	"SELECT fence, owner_token, lease_expires_at,"
	" lease_expires_at OPERATOR(pg_catalog.>) $2 AS live"
	" FROM ONLY sandbox_store.leases"
	" WHERE key OPERATOR(pg_catalog.=) $1 AND owner_token IS NOT NULL",
	2,
	{TEXTOID, TIMESTAMPTZOID},
	SPI_OK_SELECT};

/*
 * The key's newest fence and whether a claim is set, the row locked FOR
 * SHARE: the lock waits for a transaction that is changing the row (the
 * reaper's uncommitted retire), and then reads what it committed (READ
 * COMMITTED) or raises 40001 (REPEATABLE READ, SERIALIZABLE).  FOR KEY
 * SHARE would not wait for an UPDATE that leaves the key alone.
 */
static SbStatement lease_lock = {
	"SELECT fence, owner_token IS NOT NULL AS claimed FROM ONLY sandbox_store.leases"
	" WHERE key OPERATOR(pg_catalog.=) $1 FOR SHARE",
	1,
	{TEXTOID},
	SPI_OK_SELECT};

/*
 * Take the key's claim unless a live one holds it ($2: the new fence, drawn
 * above the key's by the caller; $3: the expiry; $4: now).  The GREATEST is
 * a guard: the caller checks that the fence stored is the one it drew.
 */
static SbStatement claim_take = {
	"INSERT INTO sandbox_store.leases AS l (key, fence, owner_token, lease_expires_at)"
	" VALUES ($1, $2, pg_catalog.gen_random_uuid(), $3)"
	" ON CONFLICT (key) DO UPDATE"
	" SET fence = GREATEST(l.fence OPERATOR(pg_catalog.+) 1, EXCLUDED.fence),"
	" owner_token = EXCLUDED.owner_token, lease_expires_at = EXCLUDED.lease_expires_at"
	" WHERE l.owner_token IS NULL OR l.lease_expires_at OPERATOR(pg_catalog.<=) $4"
	" RETURNING fence, owner_token, lease_expires_at",
	4,
	{TEXTOID, INT8OID, TIMESTAMPTZOID, TIMESTAMPTZOID},
	SPI_OK_INSERT_RETURNING};

/*
 * End an expired claim, with a new fence so its holder is fenced off ($2:
 * now, $3: the new fence, drawn above the key's by the caller).
 */
static SbStatement claim_retire = {
	"UPDATE ONLY sandbox_store.leases"
	" SET fence = GREATEST(fence OPERATOR(pg_catalog.+) 1, $3),"
	" owner_token = NULL, lease_expires_at = NULL"
	" WHERE key OPERATOR(pg_catalog.=) $1 AND owner_token IS NOT NULL"
	" AND lease_expires_at OPERATOR(pg_catalog.<=) $2",
	3,
	{TEXTOID, TIMESTAMPTZOID, INT8OID},
	SPI_OK_UPDATE};

/* Extend a claim to $3 (now + lease, sb_lease_expiry). */
static SbStatement claim_renew = {
	"UPDATE ONLY sandbox_store.leases"
	" SET lease_expires_at = $3"
	" WHERE key OPERATOR(pg_catalog.=) $1 AND owner_token OPERATOR(pg_catalog.=) $2"
	" RETURNING lease_expires_at",
	3,
	{TEXTOID, UUIDOID, TIMESTAMPTZOID},
	SPI_OK_UPDATE_RETURNING};

static SbStatement claim_release = {
	"UPDATE ONLY sandbox_store.leases SET owner_token = NULL, lease_expires_at = NULL"
	" WHERE key OPERATOR(pg_catalog.=) $1 AND owner_token OPERATOR(pg_catalog.=) $2",
	2,
	{TEXTOID, UUIDOID},
	SPI_OK_UPDATE};

/* End the claim that was given fence (a write that also releases). */
static SbStatement claim_release_fenced = {
	"UPDATE ONLY sandbox_store.leases SET owner_token = NULL, lease_expires_at = NULL"
	" WHERE key OPERATOR(pg_catalog.=) $1 AND fence OPERATOR(pg_catalog.=) $2"
	" AND owner_token IS NOT NULL",
	2,
	{TEXTOID, INT8OID},
	SPI_OK_UPDATE};

/*
 * Whether this database has claims: the installed version is 1.1 or later
 * (catalog.c refuses calls, 42P01, when such a version's leases or
 * fence_seq is not found).
 */
bool
sb_claims_enabled(void)
{
	return sb_relations()->claims;
}

/* Whether a claim token is set on the key (the SQL form of the direct read). */
static SbStatement token_probe = {
	"SELECT FROM ONLY sandbox_store.leases"
	" WHERE key OPERATOR(pg_catalog.=) $1 AND owner_token IS NOT NULL",
	1,
	{TEXTOID},
	SPI_OK_SELECT};

/*
 * Whether a claim token is set on the key (a live or an expired claim),
 * read with the newest snapshot: a claim is about now, like a lock, at
 * every isolation level.  This is the lock-mode hot path's only look at the
 * claims: a direct probe of the primary key of sandbox_store.leases
 * (direct.c) when it may be, else a statement.  The caller holds the key's
 * advisory lock, under which claims change.  It reads without a row lock:
 * the only change that can be in flight under the lock is the reaper's
 * retire, which clears the token, so a token this sees set is either set
 * or being retired, and the caller then decides on a locked read
 * (sb_claim_state, sb_retire_claim); a token this sees clear stays clear.
 */
bool
sb_claim_token_set(const text *key)
{
	Snapshot snapshot;
	TupleDesc desc;
	bool set = false;

	if (!sb_claims_enabled())
		return false;

	snapshot = RegisterSnapshot(GetLatestSnapshot());
	desc = NULL;
	if (sb_direct_reads())
	{
		HeapTuple row = sb_direct_fetch(SB_LEASES, key, snapshot, &desc);

		if (row != NULL)
		{
			int attnum = SPI_fnumber(desc, "owner_token");
			bool isnull;

			if (attnum <= 0)
				sb_report_missing_table("leases.owner_token");
			(void) heap_getattr(row, attnum, desc, &isnull);
			set = !isnull;
			heap_freetuple(row); /* a call waiting for a claim polls here */
		}
	}
	/* No direct read, or none possible (desc NULL): the statement. */
	if (desc == NULL)
	{
		Datum arg = PointerGetDatum(key);

		set = sb_spi_execute(&token_probe, &arg, NULL, false, snapshot) > 0;
	}
	UnregisterSnapshot(snapshot);
	return set;
}

/* The claim in row 0 of the last result (the CLAIM_COL_* columns). */
static void
read_claim(SbClaim *claim)
{
	claim->fence = DatumGetInt64(sb_spi_value(SPI_tuptable, 0, CLAIM_COL_FENCE, "fence"));
	claim->owner_token =
		*DatumGetUUIDP(sb_spi_value(SPI_tuptable, 0, CLAIM_COL_TOKEN, "owner_token"));
	claim->lease_expires_at =
		DatumGetTimestampTz(sb_spi_value(SPI_tuptable, 0, CLAIM_COL_EXPIRES, "lease_expires_at"));
}

/*
 * The state of the key's claim, read with the newest snapshot (a claim is
 * about now, like a lock).  claim is filled unless CLAIM_NONE.  Read without
 * a row lock, as sb_claim_token_set is: the callers act on CLAIM_NONE and
 * CLAIM_LIVE, which no change in flight under the key's lock can make
 * wrong, and on CLAIM_EXPIRED only through a locked read (sb_retire_claim,
 * sb_take_claim).
 */
SbClaimState
sb_claim_state(const text *key, SbClaim *claim)
{
	Datum args[2];
	SbClaimState state = CLAIM_NONE;

	if (!sb_claims_enabled())
		return CLAIM_NONE;
	args[0] = PointerGetDatum(key);
	args[1] = TimestampTzGetDatum(GetCurrentTimestamp());
	if (sb_spi_execute(&claim_probe, args, NULL, false, GetLatestSnapshot()) > 0)
	{
		bool live = DatumGetBool(sb_spi_value(SPI_tuptable, 0, CLAIM_COL_LIVE, "live"));

		read_claim(claim);
		state = live ? CLAIM_LIVE : CLAIM_EXPIRED;
	}
	return state;
}

/*
 * The key's leases row, read row-locked with the newest snapshot
 * (lease_lock): its newest fence and whether a claim is set.  False, with
 * fence 0, when the key was never claimed.  With the key's advisory lock
 * held, the row cannot change until this transaction ends.
 */
static bool
read_lease_locked(const text *key, int64 *fence, bool *claimed)
{
	Datum arg = PointerGetDatum(key);

	*fence = 0;
	*claimed = false;
	if (sb_spi_execute(&lease_lock, &arg, NULL, false, GetLatestSnapshot()) == 0)
		return false;
	*fence = DatumGetInt64(sb_spi_value(SPI_tuptable, 0, 1, "fence"));
	*claimed = DatumGetBool(sb_spi_value(SPI_tuptable, 0, 2, "claimed"));
	return true;
}

/*
 * 40001: this REPEATABLE READ or SERIALIZABLE transaction's snapshot does
 * not show the key's claim as it is now, and acting on it would act beside
 * a newer version.  (store.c raises its own for a record.)
 */
SB_NORETURN_BEFORE static void report_claim_changed(const text *key) SB_NORETURN_AFTER;

static void
report_claim_changed(const text *key)
{
	ereport(ERROR,
			(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
			 errmsg("could not serialize access to sandbox key \"%s\"", text_to_cstring(key)),
			 errdetail("The key's claim was changed by a transaction that committed after this "
					   "transaction's snapshot was taken."),
			 errhint("Retry the transaction, or run it at READ COMMITTED.")));
}

/* End the key's expired claim.  False if it is not set any more. */
bool
sb_retire_claim(const text *key)
{
	int64 fence;
	bool claimed;
	bool retired = false;

	/*
	 * Read locked: a reaper that retired the claim and let go of the key's
	 * lock may not have committed yet.
	 */
	if (read_lease_locked(key, &fence, &claimed) && claimed)
	{
		Datum args[3];

		args[0] = PointerGetDatum(key);
		args[1] = TimestampTzGetDatum(GetCurrentTimestamp());
		args[2] = Int64GetDatum(sb_draw_fence(fence));
		retired = sb_spi_execute(&claim_retire, args, NULL, false, InvalidSnapshot) > 0;
	}

	/*
	 * The caller saw the claim expired under the key's lock, where only a
	 * committed retire can have ended it since: at READ COMMITTED it looks
	 * again; under REPEATABLE READ or SERIALIZABLE this transaction's
	 * snapshot does not show the newest state.
	 */
	if (!retired && IsolationUsesXactSnapshot())
		report_claim_changed(key);
	return retired;
}

/*
 * With the key's advisory lock held: is the key free of claims?  An expired
 * claim is retired on the way (the key is being taken over).  Returns false
 * with the live claim in *claim otherwise.
 */
bool
sb_key_free(const text *key, SbClaim *claim)
{
	SbClaimState state = sb_claim_state(key, claim);

	for (;;)
	{
		if (state == CLAIM_NONE)
			return true;
		if (state == CLAIM_LIVE)
			return false;
		if (sb_retire_claim(key))
			return true;
		/* renewed or released meanwhile: look again */
		state = sb_claim_state(key, claim);
	}
}

/*
 * With the key's advisory lock held: take the key's claim for lease.  False
 * if a live claim holds it.
 */
bool
sb_take_claim(const text *key, const Interval *lease, SbClaim *claim)
{
	Datum args[4];
	TimestampTz current = GetCurrentTimestamp();
	int64 newest;
	bool claimed;
	int64 fence;
	bool taken;

	(void) read_lease_locked(key, &newest, &claimed);
	fence = sb_draw_fence(newest);
	args[0] = PointerGetDatum(key);
	args[1] = Int64GetDatum(fence);
	args[2] = TimestampTzGetDatum(sb_lease_expiry(current, lease));
	args[3] = TimestampTzGetDatum(current);
	taken = sb_spi_execute(&claim_take, args, NULL, false, InvalidSnapshot) > 0;
	if (!taken)
		return false;
	read_claim(claim);
	if (claim->fence != fence)
		elog(ERROR,
			 "sandbox key \"%s\" was given fence " INT64_FORMAT ", not the drawn " INT64_FORMAT,
			 text_to_cstring(key), claim->fence, fence);

	/*
	 * The fence leaves the server in the result.  nextval WAL-logs ahead but
	 * does not flush, and a crash before this transaction's commit is flushed
	 * would bring the sequence back below the fence and hand it out again.
	 * Make the WAL that covers it durable first, always: even in autocommit
	 * with synchronous_commit on, a statement can stream rows (and so
	 * fences) to the client before it commits.  The sequence WAL-logs every
	 * 32nd value, so this flushes at most once per 32 fences; otherwise the
	 * record is durable already and XLogFlush returns at once.
	 */
	sb_flush_fences();
	return true;
}

/*
 * SB001: the caller's claim on the key no longer holds it, so nothing was
 * changed.  how says what showed it: a renewal whose token no longer holds
 * the claim, a write fenced with an older fence than the key's, one fenced
 * with a number never given for this key (newest 0: never claimed), or one
 * fenced with the key's fence after its claim was released.
 */
void
sb_report_claim_lost(const text *key, SbClaimLost how, int64 fence, int64 newest)
{
	const char *name = text_to_cstring(key);

	switch (how)
	{
		case SB_LOST_TOKEN:
			ereport(
				ERROR,
				(errcode(ERRCODE_SB_CLAIM_LOST),
				 errmsg("claim on sandbox key \"%s\" was lost", name),
				 errdetail("The owner token does not hold the key's claim: it was released, or its "
						   "lease expired and the key was taken over.  Nothing was changed."),
				 errhint("Take a new claim with sandbox_claim or sandbox_ensure.")));
			break;
		case SB_LOST_FENCE_OLD:
			ereport(ERROR,
					(errcode(ERRCODE_SB_CLAIM_LOST),
					 errmsg("claim on sandbox key \"%s\" was lost", name),
					 errdetail("The write is fenced with " INT64_FORMAT
							   ", but the key has fence " INT64_FORMAT
							   " since it was claimed or taken over again.  Nothing was changed.",
							   fence, newest),
					 errhint("Stop writing for this key.")));
			break;
		case SB_LOST_FENCE_FOREIGN:
			ereport(
				ERROR,
				(errcode(ERRCODE_SB_CLAIM_LOST),
				 errmsg("claim on sandbox key \"%s\" was lost", name),
				 newest == 0
					 ? errdetail("The write is fenced with " INT64_FORMAT
								 ", but the key was never claimed.  Nothing was changed.",
								 fence)
					 : errdetail("The write is fenced with " INT64_FORMAT
								 ", which was never given for this key (its fence is " INT64_FORMAT
								 ").  Nothing was changed.",
								 fence, newest),
				 errhint("Fence a write with the fence of a claim on the same key.")));
			break;
		case SB_LOST_FENCE_ENDED:
			ereport(
				ERROR,
				(errcode(ERRCODE_SB_CLAIM_LOST),
				 errmsg("claim on sandbox key \"%s\" was lost", name),
				 errdetail("The claim that was given fence " INT64_FORMAT
						   " has ended: it was released.  Nothing was changed.",
						   fence),
				 errhint("If this retries a write whose acknowledgement was lost, read the record "
						 "with sandbox_get to see whether the first attempt landed.  Otherwise "
						 "take a new claim.")));
			break;
	}
	pg_unreachable();
}

/*
 * Lease mode needs the leases table of version 1.1: refuse it (0A000) in a
 * database still at 1.0.
 */
void
sb_require_lease_mode(void)
{
	if (!sb_claims_enabled())
		ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						errmsg("lease mode needs sandbox_store 1.1"),
						errdetail("This database has sandbox_store 1.0, which has no claims."),
						errhint("Run ALTER EXTENSION sandbox_store UPDATE.")));
}

/* Fenced writes need the leases table of version 1.1, as lease mode does. */
static void
require_fenced_writes(void)
{
	if (!sb_claims_enabled())
		ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						errmsg("fenced writes need sandbox_store 1.1"),
						errdetail("This database has sandbox_store 1.0, which has no claims."),
						errhint("Run ALTER EXTENSION sandbox_store UPDATE.")));
}

/*
 * With the key's advisory lock held: refuse (SQLSTATE SB001) a write fenced
 * with anything but the fence of the key's current claim, live or expired
 * and not yet taken over: the key's newest fence, with its claim still set.
 * A smaller fence belongs to a claim that was taken over since; a larger
 * one, or one of a key never claimed, was never given for this key (another
 * key's fence, or a made-up number); the newest fence of a claim that was
 * released is dead too, so that a retried write cannot bring back a record
 * reaped, replaced or deleted since.
 *
 * Read row-locked with the newest snapshot (read_lease_locked), so a claim
 * committed after this transaction's snapshot counts, and a reaper's retire
 * not yet committed is waited for: at READ COMMITTED the write then sees
 * the reaper's newer fence and is refused, instead of passing and writing
 * the reaped record again.  The row stays locked until this transaction
 * ends, and the key's lock keeps everyone else from it, so the claim stays
 * as checked for the write.
 */
void
sb_check_fence(const text *key, int64 fence)
{
	int64 newest;
	bool claimed;

	require_fenced_writes();
	(void) read_lease_locked(key, &newest, &claimed);
	if (newest > fence)
		sb_report_claim_lost(key, SB_LOST_FENCE_OLD, fence, newest);
	if (newest != fence)
		sb_report_claim_lost(key, SB_LOST_FENCE_FOREIGN, fence, newest);
	if (!claimed)
		sb_report_claim_lost(key, SB_LOST_FENCE_ENDED, fence, newest);
}

/*
 * With the key's lock held: extend the claim of token to now + lease (the
 * server's clock).  True with the new expiry in *expires, false if token
 * does not hold the key's claim (released, or taken over).
 */
bool
sb_renew_claim(const text *key, const pg_uuid_t *token, const Interval *lease, TimestampTz *expires)
{
	Datum args[3];
	bool renewed;

	args[0] = PointerGetDatum(key);
	args[1] = UUIDPGetDatum(token);
	args[2] = TimestampTzGetDatum(sb_lease_expiry(GetCurrentTimestamp(), lease));
	renewed = sb_spi_execute(&claim_renew, args, NULL, false, InvalidSnapshot) > 0;
	if (renewed)
		*expires = DatumGetTimestampTz(sb_spi_value(SPI_tuptable, 0, 1, "lease_expires_at"));
	return renewed;
}

/*
 * With the key's lock held: end the claim of token.  True if it held the
 * key's claim (live, or expired but not taken over); a stale token never
 * ends its successor's claim.
 */
bool
sb_release_claim(const text *key, const pg_uuid_t *token)
{
	Datum args[2];
	bool released;

	args[0] = PointerGetDatum(key);
	args[1] = UUIDPGetDatum(token);
	released = sb_spi_execute(&claim_release, args, NULL, false, InvalidSnapshot) > 0;
	return released;
}

/*
 * With the key's lock held and fence checked (sb_check_fence): end the claim
 * that was given fence, which the check found set and row-locked.  Under
 * REPEATABLE READ or SERIALIZABLE a claim committed after this
 * transaction's snapshot is not there for the UPDATE: refuse (40001), as
 * sb_retire_claim does, rather than write the record and leave the claim
 * live.
 */
void
sb_release_fenced(const text *key, int64 fence)
{
	Datum args[2];

	args[0] = PointerGetDatum(key);
	args[1] = Int64GetDatum(fence);
	if (sb_spi_execute(&claim_release_fenced, args, NULL, false, InvalidSnapshot) > 0)
		return;
	if (IsolationUsesXactSnapshot())
		report_claim_changed(key);
	elog(ERROR, "the checked claim of fence " INT64_FORMAT " on sandbox key \"%s\" was not found",
		 fence, text_to_cstring(key));
}
