/*-------------------------------------------------------------------------
 *
 * store.c
 *	  The managed table sandbox_store.instances: every statement that reads
 *	  or writes it, and the SQL functions sandbox_upsert,
 *	  sandbox_upsert_release, sandbox_get, sandbox_delete and sandbox_list.
 *
 * Statements run through spi.c: prepared once per backend, schema-qualified,
 * executed as the table's owner.  Fenced writes (version 1.1) check in
 * claims.c first that their fence is that of the key's current claim.
 *
 *-------------------------------------------------------------------------
 */
#include "sandbox_store.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/itemptr.h"
#include "utils/tuplestore.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

PG_FUNCTION_INFO_V1(sandbox_upsert);
PG_FUNCTION_INFO_V1(sandbox_upsert_1_1);
PG_FUNCTION_INFO_V1(sandbox_upsert_release);
PG_FUNCTION_INFO_V1(sandbox_get);
PG_FUNCTION_INFO_V1(sandbox_delete);
PG_FUNCTION_INFO_V1(sandbox_delete_1_1);
PG_FUNCTION_INFO_V1(sandbox_list);

/* The symbols the 1.4.1 scripts bind (SB_ENTRY_1_4_1). */
SB_ENTRY_1_4_1(sandbox_upsert_1_1)
SB_ENTRY_1_4_1(sandbox_upsert_release)
SB_ENTRY_1_4_1(sandbox_get)
SB_ENTRY_1_4_1(sandbox_delete_1_1)
SB_ENTRY_1_4_1(sandbox_list)

/* The record columns, in Anum_instances_* order. */
#define RECORD_COLUMNS                                                                             \
	"key, provider, provider_sandbox_id, latest_snapshot_id, thread_id, "                          \
	"latest_run_id, updated_at"

/* The record of a key. */
static SbStatement record_stmt = {"SELECT " RECORD_COLUMNS " FROM ONLY sandbox_store.instances"
								  " WHERE key OPERATOR(pg_catalog.=) $1",
								  1,
								  {TEXTOID},
								  SPI_OK_SELECT};

/*
 * The same with its ctid, and row-locked with its ctid: the REPEATABLE READ
 * check (lookup_current).  A distributed table has no ctid to select.
 */
static SbStatement lookup_stmt = {"SELECT " RECORD_COLUMNS
								  ", ctid FROM ONLY sandbox_store.instances"
								  " WHERE key OPERATOR(pg_catalog.=) $1",
								  1,
								  {TEXTOID},
								  SPI_OK_SELECT};

static SbStatement lock_stmt = {"SELECT " RECORD_COLUMNS ", ctid FROM ONLY sandbox_store.instances"
								" WHERE key OPERATOR(pg_catalog.=) $1 FOR UPDATE",
								1,
								{TEXTOID},
								SPI_OK_SELECT};

/*
 * The rows a function returns as rows of the table select every column (*):
 * the function's row type is the table's, with any column an admin added.
 */
static SbStatement get_stmt = {
	"SELECT * FROM ONLY sandbox_store.instances WHERE key OPERATOR(pg_catalog.=) $1",
	1,
	{TEXTOID},
	SPI_OK_SELECT};

/* The records of a thread. */
static SbStatement list_stmt = {"SELECT * FROM ONLY sandbox_store.instances"
								" WHERE thread_id OPERATOR(pg_catalog.=) $1"
								" ORDER BY updated_at DESC, key",
								1,
								{TEXTOID},
								SPI_OK_SELECT};

/* Insert or fully replace a record. */
static SbStatement upsert_stmt = {
	"INSERT INTO sandbox_store.instances AS i (" RECORD_COLUMNS ")"
	" VALUES ($1, $2, $3, $4, $5, $6, $7)"
	" ON CONFLICT (key) DO UPDATE SET"
	" provider = EXCLUDED.provider,"
	" provider_sandbox_id = EXCLUDED.provider_sandbox_id,"
	" latest_snapshot_id = EXCLUDED.latest_snapshot_id,"
	" thread_id = EXCLUDED.thread_id,"
	" latest_run_id = EXCLUDED.latest_run_id,"
	" updated_at = EXCLUDED.updated_at"
	" RETURNING *",
	Natts_instances,
	{TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TIMESTAMPTZOID},
	SPI_OK_INSERT_RETURNING};

/* Remove a key's record. */
static SbStatement delete_stmt = {
	"DELETE FROM ONLY sandbox_store.instances WHERE key OPERATOR(pg_catalog.=) $1",
	1,
	{TEXTOID},
	SPI_OK_DELETE};

/*
 * Stamp a fresh record with a run.  A record is fresh when updated_at is at
 * or after $3, the caller's transaction start minus max_age (sb_cutoff,
 * in UTC).
 * The stamp never moves updated_at backwards: a record written by a
 * transaction that started after the caller's (and committed before the
 * caller took the key) keeps that later time.
 */
#define STAMP_SQL                                                                                  \
	"UPDATE ONLY sandbox_store.instances"                                                          \
	" SET latest_run_id = $2, updated_at = GREATEST(updated_at, pg_catalog.now())"                 \
	" WHERE key OPERATOR(pg_catalog.=) $1"                                                         \
	" AND ($3 IS NULL OR updated_at OPERATOR(pg_catalog.>=) $3)"                                   \
	" AND ($4 IS NULL OR provider OPERATOR(pg_catalog.=) $4)"

static SbStatement stamp_stmt = {STAMP_SQL " RETURNING " RECORD_COLUMNS,
								 4,
								 {TEXTOID, TEXTOID, TIMESTAMPTZOID, TEXTOID},
								 SPI_OK_UPDATE_RETURNING};

/* The names of the columns RECORD_COLUMNS lists, in Anum_instances_* order. */
static const char *const record_column_names[Natts_instances] = {
	"key",       "provider",      "provider_sandbox_id", "latest_snapshot_id",
	"thread_id", "latest_run_id", "updated_at"};

/*
 * The record in row 0 of the last result (a statement selecting
 * RECORD_COLUMNS first), copied to the context the SPI connection was made
 * from.  Each column's name is checked, as sb_spi_value does.
 */
static void
copy_record(SbRecord *rec)
{
	TupleDesc desc = SPI_tuptable->tupdesc;
	HeapTuple tuple = SPI_copytuple(SPI_tuptable->vals[0]);

	for (int i = 0; i < Natts_instances; i++)
	{
		if (i >= desc->natts ||
			strcmp(NameStr(TupleDescAttr(desc, i)->attname), record_column_names[i]) != 0)
			elog(ERROR, "column %d of a record result is not \"%s\"", i + 1,
				 record_column_names[i]);
		rec->values[i] = SPI_getbinval(tuple, desc, i + 1, &rec->nulls[i]);
	}
}

/*
 * With citus installed, the check of lookup_current cannot be made: a
 * distributed table has no ctid, and citus gives no snapshot across nodes
 * for REPEATABLE READ to mean what it means on one server.
 */
static void
report_snapshot_isolation_on_citus(void)
{
	ereport(
		ERROR,
		(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
		 errmsg("sandbox_store does not support REPEATABLE READ or SERIALIZABLE with citus"),
		 errdetail(
			 "With citus installed, writes and ensures of sandbox_store run only at READ COMMITTED."),
		 errhint("Call it in a READ COMMITTED transaction.")));
}

/* The ctid lookup_stmt and lock_stmt select after the record columns. */
static ItemPointerData
result_ctid(void)
{
	Datum ctid = sb_spi_value(SPI_tuptable, 0, Natts_instances + 1, "ctid");

	return *(ItemPointer) DatumGetPointer(ctid);
}

/*
 * 40001: this REPEATABLE READ or SERIALIZABLE transaction's snapshot does
 * not show the key's record as it is now, and acting on it would act
 * beside a newer version.  (claims.c raises its own for a claim.)
 */
SB_NORETURN_BEFORE static void report_record_changed(const text *key) SB_NORETURN_AFTER;

static void
report_record_changed(const text *key)
{
	ereport(ERROR,
			(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
			 errmsg("could not serialize access to sandbox key \"%s\"", text_to_cstring(key)),
			 errdetail("The key's record was changed by a transaction that committed after this "
					   "transaction's snapshot was taken."),
			 errhint("Retry the transaction, or run it at READ COMMITTED.")));
}

/*
 * Under REPEATABLE READ or SERIALIZABLE, read the key's record as the
 * transaction snapshot shows it, and make sure that is, and stays, the
 * newest state, else raise 40001.  The snapshot may be older than the key's
 * lock: a record committed, replaced or deleted by another transaction since
 * is not what the snapshot shows, and acting on that view would create twice
 * or write a second row for the key next to one the snapshot still sees.
 *
 * The newest record is read row-locked (lock_stmt).  The lock waits for a
 * transaction that is deleting or replacing it, whether or not that one holds
 * the key's advisory lock (sandbox_reap lets go of a key's lock before it
 * commits; an unfenced upsert at READ COMMITTED takes none), and raises
 * 40001 if it commits; once locked the row stays the key's only live one
 * until this transaction ends.  Then the snapshot's record must be that row.
 * Returns whether there is a record; it is row 0 of SPI's result.
 */
static bool
lookup_current(Datum key)
{
	bool newest;
	ItemPointerData newest_ctid;
	bool seen;

	if (sb_relations()->citus)
		report_snapshot_isolation_on_citus();
	newest = sb_spi_execute(&lock_stmt, &key, NULL, false, GetLatestSnapshot()) > 0;

	if (newest)
		newest_ctid = result_ctid();
	seen = sb_spi_execute(&lookup_stmt, &key, NULL, false, InvalidSnapshot) > 0;
	if (seen != newest)
		report_record_changed((const text *) DatumGetPointer(key));
	if (seen)
	{
		ItemPointerData seen_ctid = result_ctid();

		if (!ItemPointerEquals(&seen_ctid, &newest_ctid))
			report_record_changed((const text *) DatumGetPointer(key));
	}
	return seen;
}

/*
 * Stamp the key's record with run_id and now() (keeping a later updated_at)
 * if it is fresh: no older than max_age (when given) and owned by provider
 * (when given).  Returns true and the stamped record, or false when there is
 * no fresh record.  The caller is connected to SPI (spi.c) and holds the
 * key's lock; the record is copied to the context the connection was made
 * from.
 */
bool
sb_store_stamp(const text *key, const text *run_id, const Interval *max_age, const text *provider,
			   SbRecord *out)
{
	Datum args[4];
	char nulls[4] = {' ', ' ', ' ', ' '};

	args[0] = PointerGetDatum(key);
	args[1] = PointerGetDatum(run_id);
	args[2] = max_age ? TimestampTzGetDatum(sb_cutoff(max_age)) : (Datum) 0;
	args[3] = PointerGetDatum(provider);
	if (max_age == NULL)
		nulls[2] = 'n';
	if (provider == NULL)
		nulls[3] = 'n';

	if (sb_spi_execute(&stamp_stmt, args, nulls, false, InvalidSnapshot) == 0)
		return false;
	copy_record(out);
	return true;
}

/*
 * Read the key's record with a fresh snapshot (READ COMMITTED), or raise
 * 40001 if the transaction snapshot does not show the newest committed
 * state.  Same calling convention as sb_store_stamp.
 */
bool
sb_store_lookup(const text *key, SbRecord *out)
{
	Datum arg = PointerGetDatum(key);
	bool found = IsolationUsesXactSnapshot()
					 ? lookup_current(arg)
					 : sb_spi_execute(&record_stmt, &arg, NULL, false, InvalidSnapshot) > 0;

	if (found)
		copy_record(out);
	return found;
}

/* Materialize SPI's result rows into the set-returning caller's tuplestore. */
static void
return_rows(FunctionCallInfo fcinfo)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Datum *values = palloc(rsinfo->setDesc->natts * sizeof(Datum));
	bool *nulls = palloc(rsinfo->setDesc->natts * sizeof(bool));

	for (uint64 row = 0; row < SPI_processed; row++)
	{
		sb_result_values(rsinfo->setDesc, SPI_tuptable->vals[row], SPI_tuptable->tupdesc, values,
						 nulls);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
}

/*
 * sandbox_upsert(key, provider, provider_sandbox_id, thread_id,
 *				  latest_snapshot_id, latest_run_id, updated_at [, fence])
 * sandbox_upsert_release(key, fence, provider, provider_sandbox_id,
 *						  thread_id, latest_snapshot_id, latest_run_id,
 *						  updated_at)
 *	  RETURNS sandbox_store.instances
 *
 * Inserts or fully replaces the record: optional fields passed as NULL clear
 * what was stored.  Version 1.1 adds fence: a fenced write takes the key's
 * lock and is refused (SB001) unless fence is that of the key's current
 * claim (not taken over since, not released).  An
 * unfenced write takes no lock, except under REPEATABLE READ or SERIALIZABLE.
 * sandbox_upsert_release (1.3) is a fenced write that also ends the claim
 * the fence was given with, in the same transaction: a lease-mode create or
 * resume then commits twice (claim, write) instead of three times.
 */

/*
 * Where an upsert function has its arguments (key is always the first).
 * They are checked in declaration order: sandbox_upsert's fence is its last
 * argument, sandbox_upsert_release's its second.
 */
typedef struct UpsertArgs
{
	const char *name; /* the SQL function's */
	int fields;       /* provider; then provider_sandbox_id, thread_id,
				   * latest_snapshot_id, latest_run_id, updated_at */
	int fence;        /* the fence */
	bool release;     /* fence required; end its claim */
} UpsertArgs;

/*
 * Check the fence argument of an upsert function; returns whether the write
 * is fenced.
 */
static bool
upsert_fence(FunctionCallInfo fcinfo, const UpsertArgs *at, int64 *fence)
{
	if (!at->release)
		return sb_optional_fence(fcinfo, at->fence, fence);
	*fence = sb_required_fence(fcinfo, at->fence);
	return true;
}

static const UpsertArgs upsert_args = {"sandbox_upsert", 1, 7, false};
static const UpsertArgs upsert_release_args = {"sandbox_upsert_release", 2, 1, true};

static Datum
upsert(FunctionCallInfo fcinfo, const UpsertArgs *at)
{
	Datum args[Natts_instances];
	char nulls[Natts_instances];
	TupleDesc desc;
	Datum *values;
	bool *isnull;
	HeapTuple result;
	int64 fence = 0;
	bool fenced = false;
	MemoryContext outer = CurrentMemoryContext;

	args[Anum_instances_key - 1] = PointerGetDatum(sb_required_key(fcinfo, 0));
	if (at->fence < at->fields)
		fenced = upsert_fence(fcinfo, at, &fence);
	args[Anum_instances_provider - 1] =
		PointerGetDatum(sb_required_text(fcinfo, at->fields, "provider"));
	args[Anum_instances_provider_sandbox_id - 1] =
		PointerGetDatum(sb_required_text(fcinfo, at->fields + 1, "provider_sandbox_id"));
	args[Anum_instances_thread_id - 1] =
		PointerGetDatum(sb_required_text(fcinfo, at->fields + 2, "thread_id"));
	args[Anum_instances_latest_snapshot_id - 1] =
		PointerGetDatum(sb_optional_text(fcinfo, at->fields + 3, "latest_snapshot_id"));
	args[Anum_instances_latest_run_id - 1] =
		PointerGetDatum(sb_optional_text(fcinfo, at->fields + 4, "latest_run_id"));
	args[Anum_instances_updated_at - 1] =
		TimestampTzGetDatum(sb_required_timestamp(fcinfo, at->fields + 5, "updated_at"));
	if (at->fence > at->fields)
		fenced = upsert_fence(fcinfo, at, &fence);
	for (int i = 0; i < Natts_instances; i++)
		nulls[i] =
			DatumGetPointer(args[i]) == NULL && i != Anum_instances_updated_at - 1 ? 'n' : ' ';

	/*
	 * A fenced write takes the key's lock to check its fence.  Under
	 * REPEATABLE READ or SERIALIZABLE every write takes it, so that its
	 * snapshot check below and the write are one step for every caller that
	 * also takes the key: a delete or ensure then waits for this transaction
	 * instead of failing it.
	 */
	sb_spi_connect();
	if (fenced || IsolationUsesXactSnapshot())
	{
		const text *key = (const text *) DatumGetPointer(args[Anum_instances_key - 1]);
		SbWait wait = sb_wait_from(NULL);

		sb_lock_key(key, &wait);
		if (fenced)
			sb_check_fence(key, fence);
		/* (before the write: its result is the last statement's) */
		if (at->release)
			sb_release_fenced(key, fence);
	}

	/*
	 * Under REPEATABLE READ or SERIALIZABLE, a record deleted or replaced
	 * after this transaction's snapshot would still be visible to it next to
	 * the new one: refuse (40001) unless the snapshot shows the newest state,
	 * and keep it so (lookup_current).
	 */
	if (IsolationUsesXactSnapshot())
		lookup_current(args[Anum_instances_key - 1]);
	if (sb_spi_execute(&upsert_stmt, args, nulls, false, InvalidSnapshot) != 1)
		elog(ERROR, "upsert of a sandbox record returned no row");
	MemoryContextSwitchTo(outer);
	/*
	 * The row type now that the table is held: an admin's column change may
	 * have committed while this call waited for it.
	 */
	desc = sb_result_planned_desc(fcinfo,
								  sb_result_desc(fcinfo, at->name, 1, MaxTupleAttributeNumber));
	values = palloc(desc->natts * sizeof(Datum));
	isnull = palloc(desc->natts * sizeof(bool));
	sb_result_values(desc, SPI_tuptable->vals[0], SPI_tuptable->tupdesc, values, isnull);
	result = heap_form_tuple(desc, values, isnull);
	sb_spi_finish();

	PG_RETURN_DATUM(HeapTupleGetDatum(result));
}

/*
 * The snapshot a read in the caller's snapshot runs with: the statement's
 * (InvalidSnapshot), or a new one if the table changed while this call
 * waited for it (sb_lock_table_for_read).
 */
static Snapshot
statement_snapshot(void)
{
	return sb_lock_table_for_read(SB_INSTANCES) ? GetLatestSnapshot() : InvalidSnapshot;
}

/*
 * sandbox_get(key) RETURNS SETOF sandbox_store.instances: 0 or 1 row, in the
 * caller's snapshot.  A direct probe of the primary key (direct.c) when it
 * may be, else the lookup statement.
 */
Datum
sandbox_get(PG_FUNCTION_ARGS)
{
	Datum key = PointerGetDatum(sb_required_key(fcinfo, 0));

	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	if (sb_direct_reads())
	{
		ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
		TupleDesc desc;
		HeapTuple row;

		sb_call_begin();
		row = sb_direct_fetch(SB_INSTANCES, (const text *) DatumGetPointer(key), NULL, &desc);
		sb_call_end();
		/* desc NULL: a primary key of an admin's making; the statement reads. */
		if (desc != NULL)
		{
			if (row != NULL)
			{
				Datum *values = palloc(rsinfo->setDesc->natts * sizeof(Datum));
				bool *nulls = palloc(rsinfo->setDesc->natts * sizeof(bool));

				sb_result_values(rsinfo->setDesc, row, desc, values, nulls);
				tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
			}
			return (Datum) 0;
		}
	}
	sb_spi_connect();
	sb_spi_execute(&get_stmt, &key, NULL, true, statement_snapshot());
	return_rows(fcinfo);
	sb_spi_finish();
	return (Datum) 0;
}

/* sandbox_list(thread_id) RETURNS SETOF sandbox_store.instances, newest first. */
Datum
sandbox_list(PG_FUNCTION_ARGS)
{
	Datum thread_id = PointerGetDatum(sb_required_text(fcinfo, 0, "thread_id"));

	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	sb_spi_connect();
	sb_spi_execute(&list_stmt, &thread_id, NULL, true, statement_snapshot());
	return_rows(fcinfo);
	sb_spi_finish();
	return (Datum) 0;
}

/*
 * sandbox_delete(key [, fence]) RETURNS boolean
 *
 * Takes the key's lock first (waiting as the session allows, and for a live
 * claim), so a delete never races an ensure in flight.  A fenced delete
 * (version 1.1) is the claim holder's own: it does not wait for claims but
 * is refused (SB001) unless fence is that of the key's current claim, as a
 * fenced upsert is.  Deleting a missing key returns false.
 */
static Datum
delete_record(FunctionCallInfo fcinfo)
{
	text *key = sb_required_key(fcinfo, 0);
	Datum arg = PointerGetDatum(key);
	SbWait wait = sb_wait_from(NULL);
	int64 fence;
	bool deleted;

	bool fenced = sb_optional_fence(fcinfo, 1, &fence);

	sb_spi_connect();
	if (fenced)
	{
		sb_lock_key(key, &wait);
		sb_check_fence(key, fence);
	}
	else
		sb_acquire_key(key, &wait);
	deleted = sb_spi_execute(&delete_stmt, &arg, NULL, false, InvalidSnapshot) > 0;
	if (!deleted && IsolationUsesXactSnapshot())
		lookup_current(arg);
	sb_spi_finish();

	PG_RETURN_BOOL(deleted);
}

/*
 * Entry points.  Each SQL signature has its own symbol since 1.3 (as
 * pg_stat_statements does), so the C side never guesses the SQL version:
 *
 *	  sandbox_upsert_1_1, sandbox_delete_1_1  the signatures with fence (1.1
 *											  on), bound by the 1.3 scripts;
 *	  sandbox_upsert, sandbox_delete		  the symbols of the 1.0-1.2
 *											  scripts, for databases not yet
 *											  updated: 1.0 declares them
 *											  without fence, 1.1 and 1.2
 *											  with, and a fence the call
 *											  does not have reads as NULL.
 */
Datum
sandbox_upsert_1_1(PG_FUNCTION_ARGS)
{
	if (PG_NARGS() != 8)
		elog(ERROR, "sandbox_upsert_1_1 called with %d arguments, not 8", PG_NARGS());
	return upsert(fcinfo, &upsert_args);
}

Datum
sandbox_upsert(PG_FUNCTION_ARGS)
{
	return upsert(fcinfo, &upsert_args);
}

Datum
sandbox_upsert_release(PG_FUNCTION_ARGS)
{
	if (PG_NARGS() != 8)
		elog(ERROR, "sandbox_upsert_release called with %d arguments, not 8", PG_NARGS());
	return upsert(fcinfo, &upsert_release_args);
}

Datum
sandbox_delete_1_1(PG_FUNCTION_ARGS)
{
	if (PG_NARGS() != 2)
		elog(ERROR, "sandbox_delete_1_1 called with %d arguments, not 2", PG_NARGS());
	return delete_record(fcinfo);
}

Datum
sandbox_delete(PG_FUNCTION_ARGS)
{
	return delete_record(fcinfo);
}
