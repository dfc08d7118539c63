/*-------------------------------------------------------------------------
 *
 * ensure.c
 *	  sandbox_ensure: the resume-or-create decision for one key, made under
 *	  the key's transaction-scoped lock.
 *
 *	  create	no record: the caller creates a sandbox and upserts it in the
 *				same transaction, which holds the lock until it ends.
 *	  resume	a fresh record, already stamped with run_id and now().
 *	  recreate	a record older than max_age, or of another provider: the
 *				row carries that old record so the caller can destroy it.
 *
 * The decision is read after the lock is held, with a fresh snapshot, so a
 * waiter sees what the previous holder committed (or, if it rolled back,
 * that there is still nothing).  The hot path, resume, is one statement.
 *
 * With a lease (version 1.1) the same decision comes with a claim on the
 * key (claims.c) that outlives the transaction.  Either way a live claim
 * makes the call wait: the lock is let go, the claim polled, and the lock
 * taken again.
 *
 *-------------------------------------------------------------------------
 */
#include "sandbox_store.h"

#include "access/htup_details.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "utils/builtins.h"

PG_FUNCTION_INFO_V1(sandbox_ensure);
PG_FUNCTION_INFO_V1(sandbox_ensure_1_1);

/* The symbols the 1.4.1 scripts bind (SB_ENTRY_1_4_1). */
SB_ENTRY_1_4_1(sandbox_ensure_1_1)

/* Result columns: action, the record in Anum_instances_* order, then (1.1) the claim. */
#define ENSURE_NATTS_1_0 (1 + Natts_instances)
#define ENSURE_NATTS_1_1 (ENSURE_NATTS_1_0 + 3)

typedef struct EnsureArgs
{
	text *key;
	text *run_id;
	Interval *max_age;
	text *provider;
	SbWait wait;
	Interval *lease; /* NULL: lock mode */
} EnsureArgs;

static HeapTuple
ensure_row(TupleDesc desc, const char *action, const SbRecord *rec, const SbClaim *claim)
{
	Datum values[ENSURE_NATTS_1_1];
	bool nulls[ENSURE_NATTS_1_1];

	values[0] = CStringGetTextDatum(action);
	nulls[0] = false;
	for (int i = 0; i < Natts_instances; i++)
	{
		values[i + 1] = rec ? rec->values[i] : (Datum) 0;
		nulls[i + 1] = rec ? rec->nulls[i] : true;
	}
	if (desc->natts == ENSURE_NATTS_1_1)
	{
		int c = ENSURE_NATTS_1_0;

		values[c] = claim ? Int64GetDatum(claim->fence) : (Datum) 0;
		values[c + 1] = claim ? UUIDPGetDatum(&claim->owner_token) : (Datum) 0;
		values[c + 2] = claim ? TimestampTzGetDatum(claim->lease_expires_at) : (Datum) 0;
		nulls[c] = nulls[c + 1] = nulls[c + 2] = claim == NULL;
	}
	return heap_form_tuple(desc, values, nulls);
}

/*
 * With the key's lock held and no live claim on it: resume (a fresh record,
 * stamped), recreate (the old record, for the caller to replace) or create.
 */
static const char *
decide_record(const EnsureArgs *a, SbRecord *rec)
{
	if (sb_store_stamp(a->key, a->run_id, a->max_age, a->provider, rec))
		return "resume";
	if (sb_store_lookup(a->key, rec))
		return "recreate";
	return "create";
}

/*
 * Lock mode, with the key's lock held: the action, or NULL when a live claim
 * holds the key (in *blocker).  The hot path is one index probe (no claim
 * token on the key) and one statement that stamps a fresh record.  An
 * expired claim is retired: the key is taken over, with a new fence.
 */
static const char *
decide_lock_mode(const EnsureArgs *a, SbRecord *rec, SbClaim *blocker)
{
	if (sb_claims_enabled() && sb_claim_token_set(a->key))
	{
		SbClaimState state = sb_claim_state(a->key, blocker);

		if (state == CLAIM_LIVE)
			return NULL;
		if (state == CLAIM_EXPIRED && !sb_retire_claim(a->key))
			return NULL; /* renewed meanwhile */
	}
	return decide_record(a, rec);
}

/*
 * Lease mode, with the key's lock held: take the key's claim (into *claim)
 * and decide, or NULL when a live claim holds the key (in *blocker).
 */
static const char *
decide_lease_mode(const EnsureArgs *a, SbRecord *rec, SbClaim *claim, SbClaim *blocker)
{
	if (sb_claim_state(a->key, blocker) == CLAIM_LIVE)
		return NULL;
	if (!sb_take_claim(a->key, a->lease, claim))
		return NULL; /* renewed meanwhile */
	return decide_record(a, rec);
}

static HeapTuple
ensure_decide(TupleDesc desc, const EnsureArgs *a)
{
	const char *action;
	bool claimed = a->lease != NULL;
	SbRecord rec;
	SbClaim claim;
	SbClaim blocker;

	/*
	 * Under the key's lock; a live claim makes it wait (take.c).  The record
	 * is copied to the context the connection was made from.
	 */
	sb_spi_connect();
	for (int delay_ms = 1;; sb_back_off(a->key, &a->wait, &blocker, &delay_ms))
	{
		sb_lock_key(a->key, &a->wait);
		action = claimed ? decide_lease_mode(a, &rec, &claim, &blocker)
						 : decide_lock_mode(a, &rec, &blocker);
		if (action != NULL)
			break;
	}
	sb_spi_finish();

	/*
	 * Outside a transaction block the lock ends with the client's statement,
	 * unless a procedure or DO block holds it until its own COMMIT (take.c).
	 */
	if (!claimed && strcmp(action, "resume") != 0 && sb_lock_ends_with_statement())
		ereport(
			WARNING,
			(errmsg("sandbox_ensure returned \"%s\" outside a transaction block", action),
			 errdetail(
				 "The lock on the key ends with the statement, so another session may also be told to create a sandbox for it."),
			 errhint(
				 "Call sandbox_ensure after BEGIN (or in a procedure) and upsert the new record before COMMIT, or pass a lease.")));

	return ensure_row(desc, action, strcmp(action, "create") == 0 ? NULL : &rec,
					  claimed ? &claim : NULL);
}

/*
 * sandbox_ensure(key, run_id, max_age DEFAULT NULL, provider DEFAULT NULL,
 *				  wait DEFAULT NULL [, lease DEFAULT NULL])
 *	  RETURNS SETOF ensure_result (action text, <the instances columns>
 *					[, fence, owner_token, lease_expires_at])
 *
 * Returns exactly one row.  The set-returning protocol is value-per-call:
 * all work happens in the first call.  The bracketed parts are version 1.1.
 *
 * Entry points: sandbox_ensure_1_1 is the 1.1 signature (lease, eleven
 * columns), bound by the 1.3 scripts.  sandbox_ensure is the symbol of the
 * 1.0-1.2 scripts, for databases not yet updated: 1.0 declares it without
 * lease and with eight columns, 1.1 and 1.2 with both, so it tells them
 * apart by its arguments and result columns.
 */
static Datum
ensure_srf(FunctionCallInfo fcinfo, bool api_1_1)
{
	FuncCallContext *funcctx;

	if (SRF_IS_FIRSTCALL())
	{
		MemoryContext oldcxt;
		TupleDesc desc;
		EnsureArgs a;

		funcctx = SRF_FIRSTCALL_INIT();
		oldcxt = MemoryContextSwitchTo(funcctx->multi_call_memory_ctx);

		a.key = sb_required_key(fcinfo, 0);
		a.run_id = sb_required_text(fcinfo, 1, "run_id");
		a.max_age = sb_optional_interval(fcinfo, 2, "max_age");
		a.provider = sb_optional_text(fcinfo, 3, "provider");
		a.wait = sb_wait_from(sb_optional_interval(fcinfo, 4, "wait"));
		if (api_1_1 && PG_NARGS() != 6)
			elog(ERROR, "sandbox_ensure_1_1 called with %d arguments, not 6", PG_NARGS());
		a.lease = PG_NARGS() > 5 ? sb_positive_interval(fcinfo, 5, "lease", false) : NULL;

		desc = sb_result_desc(fcinfo, "sandbox_ensure",
							  api_1_1 ? ENSURE_NATTS_1_1 : ENSURE_NATTS_1_0, ENSURE_NATTS_1_1);
		if (desc->natts != ENSURE_NATTS_1_0 && desc->natts != ENSURE_NATTS_1_1)
			elog(ERROR, "sandbox_ensure must return %d or %d columns", ENSURE_NATTS_1_0,
				 ENSURE_NATTS_1_1);
		if (a.lease == NULL)
			sb_check_lock_scope("sandbox_ensure");
		if (a.lease != NULL)
			sb_require_lease_mode();

		funcctx->user_fctx = ensure_decide(desc, &a);

		MemoryContextSwitchTo(oldcxt);
	}

	funcctx = SRF_PERCALL_SETUP();
	if (funcctx->call_cntr == 0)
		SRF_RETURN_NEXT(funcctx, HeapTupleGetDatum((HeapTuple) funcctx->user_fctx));
	SRF_RETURN_DONE(funcctx);
}

Datum
sandbox_ensure_1_1(PG_FUNCTION_ARGS)
{
	return ensure_srf(fcinfo, true);
}

Datum
sandbox_ensure(PG_FUNCTION_ARGS)
{
	return ensure_srf(fcinfo, false);
}
