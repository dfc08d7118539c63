/*-------------------------------------------------------------------------
 *
 * claims.c
 *	  Lease mode (version 1.1): claims on keys kept as rows of
 *	  sandbox_store.leases, and fences.  The only file that reads or writes
 *	  that table and the fence sequence; the SQL functions of lease mode,
 *	  which wait for keys, are take.c's.  Like every helper that runs
 *	  statements, these run in the caller's SPI connection (spi.c).
 *
 * A claim gives the exclusion of the key's lock without an open
 * transaction: it is a committed row (key, fence, owner_token,
 * lease_expires_at), taken under the key's advisory lock.  While it is live
 * every other ensure, lock, claim and delete of the key waits for it, by
 * polling on the latch with backoff (there is no transaction to wait on).
 *
 * A key's new fence is the larger of its newest fence plus one and the next
 * value of the sequence sandbox_store.fence_seq.  The first makes fences
 * strictly increase per key by construction, whatever the sequence does:
 * set back by an admin, or a node's own range on a distributed cluster
 * after the key's row moved there.  The second keeps them increasing across
 * keys on one server, as before 1.4, and across crash restart (sequences
 * never hand out a logged value twice) and dump/restore (the sequence and
 * the rows are dumped).  The leases row of a key is never deleted, so it
 * always holds the newest fence the key was given: a fenced write with a
 * smaller fence is refused with SB001.
 *
 * Claims are taken, retired, renewed and released only under the key's
 * advisory lock, so a claim seen under the lock cannot change until it is
 * let go.  Expiry is judged by the database server's clock
 * (clock_timestamp()), the one clock every app server shares.  When anyone takes over a key whose
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
#include "access/relation.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "storage/bufmgr.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/sequence.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#define FENCE_NEXTVAL "pg_catalog.nextval('sandbox_store.fence_seq'::pg_catalog.regclass)"

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
 * call reads it) as a parameter, $now below, rather than calling
 * clock_timestamp() themselves: citus runs no volatile function in the
 * WHERE of an ON CONFLICT on a distributed table.  Same clock, same moment.
 */

/* The key's claim, if a token is set; live tells whether it has not expired. */
static SbStatement claim_probe = {
	"SELECT fence, owner_token, lease_expires_at,"
	" lease_expires_at OPERATOR(pg_catalog.>) $2 AS live"
	" FROM sandbox_store.leases"
	" WHERE key OPERATOR(pg_catalog.=) $1 AND owner_token IS NOT NULL",
	2,
	{TEXTOID, TIMESTAMPTZOID},
	SPI_OK_SELECT};

/* Take the key's claim unless a live one holds it ($3: now). */
static SbStatement claim_take = {
	"INSERT INTO sandbox_store.leases AS l (key, fence, owner_token, lease_expires_at)"
	" VALUES ($1, " FENCE_NEXTVAL ", pg_catalog.gen_random_uuid(), $3 OPERATOR(pg_catalog.+) $2)"
	" ON CONFLICT (key) DO UPDATE"
	" SET fence = GREATEST(l.fence OPERATOR(pg_catalog.+) 1, EXCLUDED.fence),"
	" owner_token = EXCLUDED.owner_token, lease_expires_at = EXCLUDED.lease_expires_at"
	" WHERE l.owner_token IS NULL OR l.lease_expires_at OPERATOR(pg_catalog.<=) $3"
	" RETURNING fence, owner_token, lease_expires_at",
	3,
	{TEXTOID, INTERVALOID, TIMESTAMPTZOID},
	SPI_OK_INSERT_RETURNING};

/*
 * End an expired claim, with a new fence so its holder is fenced off ($2:
 * now, $3: the sequence's next value, drawn by the caller: citus runs no
 * volatile function in an UPDATE of a distributed table).
 */
static SbStatement claim_retire = {
	"UPDATE sandbox_store.leases"
	" SET fence = GREATEST(fence OPERATOR(pg_catalog.+) 1, $3),"
	" owner_token = NULL, lease_expires_at = NULL"
	" WHERE key OPERATOR(pg_catalog.=) $1 AND owner_token IS NOT NULL"
	" AND lease_expires_at OPERATOR(pg_catalog.<=) $2",
	3,
	{TEXTOID, TIMESTAMPTZOID, INT8OID},
	SPI_OK_UPDATE};

/* Extend a claim to now ($4) + lease. */
static SbStatement claim_renew = {
	"UPDATE sandbox_store.leases"
	" SET lease_expires_at = $4 OPERATOR(pg_catalog.+) $3"
	" WHERE key OPERATOR(pg_catalog.=) $1 AND owner_token OPERATOR(pg_catalog.=) $2"
	" RETURNING lease_expires_at",
	4,
	{TEXTOID, UUIDOID, INTERVALOID, TIMESTAMPTZOID},
	SPI_OK_UPDATE_RETURNING};

static SbStatement claim_release = {
	"UPDATE sandbox_store.leases SET owner_token = NULL, lease_expires_at = NULL"
	" WHERE key OPERATOR(pg_catalog.=) $1 AND owner_token OPERATOR(pg_catalog.=) $2",
	2,
	{TEXTOID, UUIDOID},
	SPI_OK_UPDATE};

/* End the claim that was given fence (a write that also releases). */
static SbStatement claim_release_fenced = {
	"UPDATE sandbox_store.leases SET owner_token = NULL, lease_expires_at = NULL"
	" WHERE key OPERATOR(pg_catalog.=) $1 AND fence OPERATOR(pg_catalog.=) $2"
	" AND owner_token IS NOT NULL",
	2,
	{TEXTOID, INT8OID},
	SPI_OK_UPDATE};

/* Whether the claim that was given fence is set (its newest state). */
static SbStatement claim_fenced_probe = {
	"SELECT FROM sandbox_store.leases"
	" WHERE key OPERATOR(pg_catalog.=) $1 AND fence OPERATOR(pg_catalog.=) $2"
	" AND owner_token IS NOT NULL",
	2,
	{TEXTOID, INT8OID},
	SPI_OK_SELECT};

static SbStatement fence_probe = {
	"SELECT fence FROM sandbox_store.leases WHERE key OPERATOR(pg_catalog.=) $1",
	1,
	{TEXTOID},
	SPI_OK_SELECT};

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
	"SELECT FROM sandbox_store.leases"
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
 * advisory lock, under which claims change.
 */
bool
sb_claim_token_set(const text *key)
{
	Snapshot snapshot;
	bool set;

	if (!sb_claims_enabled())
		return false;

	snapshot = RegisterSnapshot(GetLatestSnapshot());
	if (sb_direct_reads())
	{
		TupleDesc desc;
		HeapTuple row = sb_direct_fetch(SB_LEASES, key, snapshot, &desc);

		set = false;
		if (row != NULL)
		{
			int attnum = SPI_fnumber(desc, "owner_token");
			bool isnull;

			if (attnum <= 0)
				sb_report_missing_table("leases.owner_token");
			(void) heap_getattr(row, attnum, desc, &isnull);
			set = !isnull;
		}
	}
	else
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
 * about now, like a lock).  claim is filled unless CLAIM_NONE.
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
 * The fence sequence.  Only called where claims exist, and catalog.c
 * reports (42P01) a version with claims whose sequence is not found.
 */
static Oid
fence_sequence(void)
{
	Oid seq = sb_relations()->fence_seq;

	if (!OidIsValid(seq))
		sb_report_missing_table("fence_seq");
	return seq;
}

/* End the key's expired claim.  False if it is live again (renewed). */
bool
sb_retire_claim(const text *key)
{
	Datum args[3];
	bool retired;

	args[0] = PointerGetDatum(key);
	args[1] = TimestampTzGetDatum(GetCurrentTimestamp());
	/* the caller may call the functions, so no privilege on the sequence is checked */
	args[2] = Int64GetDatum(nextval_internal(fence_sequence(), false));
	retired = sb_spi_execute(&claim_retire, args, NULL, false, InvalidSnapshot) > 0;

	/*
	 * Under the key's lock nobody else can change the claim, so a retire that
	 * finds nothing means this transaction's snapshot does not see the claim
	 * the newest state shows (REPEATABLE READ, SERIALIZABLE).
	 */
	if (!retired && IsolationUsesXactSnapshot())
		sb_report_serialization(key, "claim");
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
 * Make the WAL record that covers every fence handed out so far durable.
 * nextval WAL-logs the sequence ahead of the values it returns and stamps
 * the sequence page with that record's end, so flushing up to the page LSN
 * is exactly enough (whichever backend logged it).
 */
static void
flush_fences(void)
{
	Relation rel;
	Buffer buf;
	XLogRecPtr lsn;

	rel = relation_open(fence_sequence(), AccessShareLock);
	buf = ReadBuffer(rel, 0);
	LockBuffer(buf, BUFFER_LOCK_SHARE);
	lsn = PageGetLSN(BufferGetPage(buf));
	UnlockReleaseBuffer(buf);
	relation_close(rel, AccessShareLock);
	XLogFlush(lsn);
}

/*
 * With the key's advisory lock held: take the key's claim for lease.  False
 * if a live claim holds it.
 */
bool
sb_take_claim(const text *key, const Interval *lease, SbClaim *claim)
{
	Datum args[3];
	bool taken;

	args[0] = PointerGetDatum(key);
	args[1] = PointerGetDatum(lease);
	args[2] = TimestampTzGetDatum(GetCurrentTimestamp());
	taken = sb_spi_execute(&claim_take, args, NULL, false, InvalidSnapshot) > 0;
	if (!taken)
		return false;
	read_claim(claim);

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
	flush_fences();
	return true;
}

/*
 * SB001: the caller's claim on the key no longer holds it, so nothing was
 * changed.  how says what showed it: a renewal whose token no longer holds
 * the claim, a write fenced with an older fence than the key's, or one
 * fenced with a number never given for this key (newest 0: never claimed).
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
	}
	pg_unreachable();
}

/*
 * Lease mode and fenced writes need the leases table of version 1.1: refuse
 * (0A000) what (e.g. "lease mode") in a database still at 1.0.
 */
void
sb_require_claims(const char *what)
{
	if (!sb_claims_enabled())
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED), errmsg("%s needs sandbox_store 1.1", what),
				 errdetail("This database has sandbox_store 1.0, which has no claims."),
				 errhint("Run ALTER EXTENSION sandbox_store UPDATE.")));
}

/*
 * With the key's advisory lock held: refuse (SQLSTATE SB001) a write fenced
 * with anything but the key's newest fence, the one its latest claim was
 * given.  A smaller fence belongs to a claim that was taken over since; a
 * larger one, or one of a key never claimed, was never given for this key
 * (another key's fence, or a made-up number).  Read with the newest
 * snapshot, so a claim committed after this transaction's snapshot counts.
 */
void
sb_check_fence(const text *key, int64 fence)
{
	Datum arg = PointerGetDatum(key);
	int64 newest = 0;

	sb_require_claims("fenced writes");
	if (sb_spi_execute(&fence_probe, &arg, NULL, false, GetLatestSnapshot()) > 0)
	{
		newest = DatumGetInt64(sb_spi_value(SPI_tuptable, 0, 1, "fence"));
	}
	if (newest > fence)
		sb_report_claim_lost(key, SB_LOST_FENCE_OLD, fence, newest);
	if (newest != fence)
		sb_report_claim_lost(key, SB_LOST_FENCE_FOREIGN, fence, newest);
}

/*
 * With the key's lock held: extend the claim of token to now + lease (the
 * server's clock).  True with the new expiry in *expires, false if token
 * does not hold the key's claim (released, or taken over).
 */
bool
sb_renew_claim(const text *key, const pg_uuid_t *token, const Interval *lease, TimestampTz *expires)
{
	Datum args[4];
	bool renewed;

	args[0] = PointerGetDatum(key);
	args[1] = UUIDPGetDatum(token);
	args[2] = IntervalPGetDatum(lease);
	args[3] = TimestampTzGetDatum(GetCurrentTimestamp());
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
 * that was given fence, the key's latest.  Nothing to do if it has ended
 * already (released; an expired claim retired since would have given the
 * key a newer fence and failed the check).  Under REPEATABLE READ or
 * SERIALIZABLE a claim committed after this transaction's snapshot is not
 * there for the UPDATE: refuse (40001), as sb_retire_claim does, rather than
 * write the record and leave the claim live.
 */
void
sb_release_fenced(const text *key, int64 fence)
{
	Datum args[2];

	args[0] = PointerGetDatum(key);
	args[1] = Int64GetDatum(fence);
	if (sb_spi_execute(&claim_release_fenced, args, NULL, false, InvalidSnapshot) > 0)
		return;
	if (IsolationUsesXactSnapshot() &&
		sb_spi_execute(&claim_fenced_probe, args, NULL, false, GetLatestSnapshot()) > 0)
		sb_report_serialization(key, "claim");
}
