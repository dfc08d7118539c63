/*-------------------------------------------------------------------------
 *
 * reap.c
 *	  sandbox_reap (version 1.1): delete and return the records that have
 *	  been idle too long and that nobody holds, oldest first, for the app to
 *	  destroy their sandboxes.
 *
 * A reaper never waits.  Candidate rows are read oldest first, without
 * locks; a key whose lock another transaction holds, or that a live claim
 * holds, is skipped untouched.  A free key's row is then locked FOR UPDATE
 * SKIP LOCKED, so two reapers never return the same record and neither waits
 * for the other.  Each key's lock is let go as soon as its record is deleted
 * (one lock at a time, however many rows are reaped): the deleted row itself
 * stays locked until the reaper commits, so an ensure of the key that gets
 * in meanwhile waits on the row and then answers create (or resume, if the
 * reaper rolls back).
 *
 *-------------------------------------------------------------------------
 */
#include "sandbox_store.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

PG_FUNCTION_INFO_V1(sandbox_reap);

/* The symbols the 1.4.1 scripts bind (SB_ENTRY_1_4_1). */
SB_ENTRY_1_4_1(sandbox_reap)

#define IDLE_CONDITION "updated_at OPERATOR(pg_catalog.<) $1"

/*
 * Candidates fetched at a time: the call's memory stays the same however
 * many records it reaps (the rows it returns go to a tuplestore, which
 * spills to disk past work_mem).
 */
#define REAP_BATCH 100

/*
 * Idle records, oldest first.  Read without row locks: a row is locked only
 * once its key has been taken (below), so a reaper never holds a row lock on
 * a record it skips, which would make the key's holder wait for it.
 */
static SbStatement candidates_stmt = {"SELECT key FROM ONLY sandbox_store.instances"
									  " WHERE " IDLE_CONDITION " ORDER BY updated_at, key",
									  1,
									  {TIMESTAMPTZOID},
									  SPI_OK_SELECT};

/*
 * The candidate's row, locked, if it is still idle and no other transaction
 * holds it (another reaper's uncommitted delete): skipped, never waited for.
 */
static SbStatement lock_stmt = {"SELECT FROM ONLY sandbox_store.instances"
								" WHERE key OPERATOR(pg_catalog.=) $2 AND " IDLE_CONDITION
								" FOR UPDATE SKIP LOCKED",
								2,
								{TIMESTAMPTZOID, TEXTOID},
								SPI_OK_SELECT};

static SbStatement reap_stmt = {"DELETE FROM ONLY sandbox_store.instances"
								" WHERE key OPERATOR(pg_catalog.=) $2 AND " IDLE_CONDITION
								" RETURNING *",
								2,
								{TIMESTAMPTZOID, TEXTOID},
								SPI_OK_DELETE_RETURNING};

/* Take the key if nobody holds it: its lock is free and no live claim holds it. */
static bool
take_if_free(const text *key)
{
	SbClaim claim;

	if (!sb_advisory_lock(key, true))
		return false;
	if (sb_key_free(key, &claim))
		return true;
	sb_unlock_key(key);
	return false;
}

/*
 * sandbox_reap(idle_for interval, max_rows int DEFAULT 100)
 *	  RETURNS SETOF sandbox_store.instances
 */
Datum
sandbox_reap(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Interval *idle_for;
	TimestampTz cutoff;
	int32 max_rows;
	int32 reaped = 0;
	Portal portal;
	Datum *values;
	bool *nulls;

	idle_for = sb_required_interval(fcinfo, 0, "idle_for");
	cutoff = sb_cutoff(idle_for);
	max_rows = sb_positive_int32(fcinfo, 1, "max_rows");

	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	values = palloc(rsinfo->setDesc->natts * sizeof(Datum));
	nulls = palloc(rsinfo->setDesc->natts * sizeof(bool));
	sb_spi_connect();
	{
		Datum arg = TimestampTzGetDatum(cutoff);

		portal = sb_spi_cursor_open(&candidates_stmt, &arg, NULL);
	}
	while (reaped < max_rows && sb_spi_cursor_fetch(portal, Min(max_rows - reaped, REAP_BATCH)) > 0)
	{
		SPITupleTable *batch = SPI_tuptable;

		for (uint64 row = 0; row < batch->numvals && reaped < max_rows; row++)
		{
			/* (the batch stays: each statement below frees only the one before it) */
			text *key = DatumGetTextPCopy(sb_spi_value(batch, row, 1, "key"));
			Datum args[2];

			if (!take_if_free(key))
			{
				pfree(key);
				continue;
			}
			args[0] = TimestampTzGetDatum(cutoff);
			args[1] = PointerGetDatum(key);
			if (sb_spi_execute(&lock_stmt, args, NULL, false, InvalidSnapshot) > 0 &&
				sb_spi_execute(&reap_stmt, args, NULL, false, InvalidSnapshot) > 0)
			{
				sb_result_values(rsinfo->setDesc, SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
								 values, nulls);
				tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
				reaped++;
			}
			/* The deleted row stays locked until commit; the key's lock need not. */
			sb_unlock_key(key);
			pfree(key);
		}
		SPI_freetuptable(batch);
	}
	SPI_cursor_close(portal);
	sb_spi_finish();
	return (Datum) 0;
}
