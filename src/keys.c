/*-------------------------------------------------------------------------
 *
 * keys.c
 *	  The SQL functions that take a key and do nothing else, in lock mode
 *	  (sandbox_lock, sandbox_try_lock) and in lease mode (sandbox_claim,
 *	  sandbox_renew, sandbox_release); and for the checkpoint writers, which
 *	  SQL code takes itself, the fence of a claim
 *	  (sandbox_store_internal._draw_claim_fence) and the lock of a thread's
 *	  first writer (sandbox_store_internal._try_writer_lock).
 *
 * Each checks its arguments (validate.c), takes the key as take.c says
 * (waiting for its lock and for a live claim, or not at all), and reads or
 * writes the key's claim in claims.c.  Nothing here waits, sleeps or
 * reports 55P03 itself: that is take.c's, below.
 *
 *-------------------------------------------------------------------------
 */
#include "sandbox_store.h"

#include "access/htup_details.h"
#include "funcapi.h"
#include "utils/builtins.h"

PG_FUNCTION_INFO_V1(sandbox_lock);
PG_FUNCTION_INFO_V1(sandbox_try_lock);
PG_FUNCTION_INFO_V1(sandbox_claim);
PG_FUNCTION_INFO_V1(sandbox_renew);
PG_FUNCTION_INFO_V1(sandbox_release);
PG_FUNCTION_INFO_V1(sandbox_draw_claim_fence);
PG_FUNCTION_INFO_V1(sandbox_try_writer_lock_v1_4_1);

/* The symbols the 1.4.1 scripts bind (SB_ENTRY_1_4_1). */
SB_ENTRY_1_4_1(sandbox_lock)
SB_ENTRY_1_4_1(sandbox_try_lock)
SB_ENTRY_1_4_1(sandbox_claim)
SB_ENTRY_1_4_1(sandbox_renew)
SB_ENTRY_1_4_1(sandbox_release)
SB_ENTRY_1_4_1(sandbox_draw_claim_fence)

/* sandbox_lock(key text, wait interval DEFAULT NULL) RETURNS void */
Datum
sandbox_lock(PG_FUNCTION_ARGS)
{
	text *key = sb_required_key(fcinfo, 0);
	Interval *wait_arg = sb_optional_interval(fcinfo, 1, "wait");
	SbWait wait = sb_wait_from(wait_arg);

	sb_check_lock_scope("sandbox_lock");
	sb_spi_connect();
	sb_acquire_key(key, &wait);
	sb_spi_finish();
	PG_RETURN_VOID();
}

/* sandbox_try_lock(key text) RETURNS boolean */
Datum
sandbox_try_lock(PG_FUNCTION_ARGS)
{
	text *key = sb_required_key(fcinfo, 0);
	SbClaim claim;

	bool free;

	sb_check_lock_scope("sandbox_try_lock");
	if (!sb_advisory_lock(key, true))
		PG_RETURN_BOOL(false);
	sb_spi_connect();
	free = sb_key_free(key, &claim);
	sb_spi_finish();
	if (!free)
		sb_unlock_key(key);
	PG_RETURN_BOOL(free);
}

/*
 * sandbox_claim(key, lease, wait DEFAULT NULL)
 *	  RETURNS TABLE(fence, owner_token, lease_expires_at)
 *
 * A claim on the key and nothing else: lease mode's lock for any critical
 * section (a LockStore.withLock), without sandbox_ensure's decision about a
 * record.  Waits like sandbox_ensure for the key's lock and for a live
 * claim.  Returns exactly one row.
 */
Datum
sandbox_claim(PG_FUNCTION_ARGS)
{
	text *key = sb_required_key(fcinfo, 0);
	Interval *lease = sb_positive_interval(fcinfo, 1, "lease", true);
	SbWait wait = sb_wait_from(sb_optional_interval(fcinfo, 2, "wait"));
	TupleDesc desc;
	Datum values[3];
	bool nulls[3] = {false, false, false};
	SbClaim claim;
	SbClaim blocker;

	desc = sb_result_desc(fcinfo, "sandbox_claim", 3, 3);

	sb_spi_connect();
	for (int delay_ms = 1;; sb_back_off(key, &wait, &blocker, &delay_ms))
	{
		sb_lock_key(key, &wait);
		if (sb_claim_state(key, &blocker) != CLAIM_LIVE && sb_take_claim(key, lease, &claim))
			break;
	}
	sb_spi_finish();

	values[0] = Int64GetDatum(claim.fence);
	values[1] = UUIDPGetDatum(&claim.owner_token);
	values[2] = TimestampTzGetDatum(claim.lease_expires_at);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, values, nulls)));
}

/*
 * sandbox_renew(key, owner_token, lease) RETURNS timestamptz
 *
 * Extends the claim of owner_token to now + lease (by the server's clock)
 * and returns the new expiry.  A claim that expired but was not taken over
 * can still be renewed; one that was taken over raises SB001.
 */
Datum
sandbox_renew(PG_FUNCTION_ARGS)
{
	TimestampTz expires = 0;
	text *key = sb_required_key(fcinfo, 0);
	pg_uuid_t *token = sb_required_uuid(fcinfo, 1, "owner_token");
	Interval *lease = sb_positive_interval(fcinfo, 2, "lease", true);
	SbWait wait = sb_wait_from(NULL);

	bool renewed;

	sb_spi_connect();
	sb_lock_key(key, &wait);
	renewed = sb_renew_claim(key, token, lease, &expires);
	sb_spi_finish();
	if (!renewed)
		sb_report_claim_lost(key, SB_LOST_TOKEN, 0, 0);
	PG_RETURN_TIMESTAMPTZ(expires);
}

/*
 * sandbox_release(key, owner_token) RETURNS boolean
 *
 * Ends the claim of owner_token: true if it held the key's claim (live or
 * expired but not taken over), false otherwise.  A stale token never ends
 * its successor's claim.
 */
Datum
sandbox_release(PG_FUNCTION_ARGS)
{
	text *key = sb_required_key(fcinfo, 0);
	pg_uuid_t *token = sb_required_uuid(fcinfo, 1, "owner_token");
	SbWait wait = sb_wait_from(NULL);

	bool released;

	sb_spi_connect();
	sb_lock_key(key, &wait);
	released = sb_release_claim(key, token);
	sb_spi_finish();
	PG_RETURN_BOOL(released);
}

/*
 * sandbox_store._draw_claim_fence(above bigint) RETURNS bigint: a new fence
 * above `above` from fence_seq, drawn as sandbox_claim draws one and
 * flushed.  Internal: granted to nobody; the checkpoint writer functions
 * call it as the extension's owner.
 */
Datum
sandbox_draw_claim_fence(PG_FUNCTION_ARGS)
{
	int64 above;
	int64 fence;

	if (PG_ARGISNULL(0))
		elog(ERROR, "sandbox_store._draw_claim_fence called with NULL");
	above = PG_GETARG_INT64(0);
	sb_spi_connect();
	fence = sb_draw_claim_fence(above);
	sb_spi_finish();
	PG_RETURN_INT64(fence);
}

/*
 * sandbox_store_internal._try_writer_lock(k text) RETURNS boolean: the lock
 * of key k (a thread's reserved writer key), taken as sandbox_try_lock takes
 * a key's lock, in the extension's own lock class: at once or not at all,
 * held until the transaction ends.  checkpoint_acquire_writer takes it for
 * a thread that has no writer row yet, so that two first acquirers never
 * wait for each other's insert; no application lock can hold it.  Internal:
 * granted to nobody.  New in 1.4.1, so it has only the 1.4.1 symbol.
 */
Datum
sandbox_try_writer_lock_v1_4_1(PG_FUNCTION_ARGS)
{
	sb_check_library_version();
	PG_RETURN_BOOL(sb_advisory_lock(PG_GETARG_TEXT_PP(0), true));
}
