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
 *-------------------------------------------------------------------------
 */
#include "sandbox_store.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "utils/builtins.h"

PG_FUNCTION_INFO_V1(sandbox_ensure);

/* Result columns: action, then the record in Anum_instances_* order. */
#define ENSURE_NATTS (1 + Natts_instances)

static HeapTuple
ensure_row(TupleDesc desc, const char *action, const SbRecord *rec)
{
	Datum values[ENSURE_NATTS];
	bool nulls[ENSURE_NATTS];

	values[0] = CStringGetTextDatum(action);
	nulls[0] = false;
	for (int i = 0; i < Natts_instances; i++)
	{
		values[i + 1] = rec ? rec->values[i] : (Datum) 0;
		nulls[i + 1] = rec ? rec->nulls[i] : true;
	}
	return heap_form_tuple(desc, values, nulls);
}

static HeapTuple
ensure_decide(TupleDesc desc, const text *key, const text *run_id, const Interval *max_age,
			  const text *provider)
{
	SbRecord rec;
	const char *action;

	SPI_connect();
	if (sb_store_stamp(key, run_id, max_age, provider, &rec))
		action = "resume";
	else if (sb_store_lookup(key, &rec))
		action = "recreate";
	else
		action = "create";
	SPI_finish();

	if (strcmp(action, "resume") != 0 && !IsTransactionBlock())
		ereport(
			WARNING,
			(errmsg("sandbox_ensure returned \"%s\" outside a transaction block", action),
			 errdetail(
				 "The lock on the key ended with the statement, so another session may also be told to create a sandbox for it."),
			 errhint("Call sandbox_ensure after BEGIN and upsert the new record before COMMIT.")));

	return ensure_row(desc, action, strcmp(action, "create") == 0 ? NULL : &rec);
}

/*
 * sandbox_ensure(key, run_id, max_age DEFAULT NULL, provider DEFAULT NULL,
 *				  wait DEFAULT NULL)
 *	  RETURNS TABLE(action text, <the instances columns>)
 *
 * Returns exactly one row.  The set-returning protocol is value-per-call:
 * all work happens in the first call.
 */
Datum
sandbox_ensure(PG_FUNCTION_ARGS)
{
	FuncCallContext *funcctx;

	if (SRF_IS_FIRSTCALL())
	{
		MemoryContext oldcxt;
		TupleDesc desc;
		text *key;
		text *run_id;
		Interval *max_age;
		text *provider;
		Interval *wait;

		funcctx = SRF_FIRSTCALL_INIT();
		oldcxt = MemoryContextSwitchTo(funcctx->multi_call_memory_ctx);

		key = sb_required_text(fcinfo, 0, "key");
		run_id = sb_required_text(fcinfo, 1, "run_id");
		max_age = sb_optional_interval(fcinfo, 2, "max_age");
		provider = sb_optional_text(fcinfo, 3, "provider");
		wait = sb_optional_interval(fcinfo, 4, "wait");

		if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE ||
			desc->natts != ENSURE_NATTS)
			elog(ERROR, "sandbox_ensure must return %d columns", ENSURE_NATTS);
		desc = BlessTupleDesc(desc);

		sb_lock_key(key, wait);
		funcctx->user_fctx = ensure_decide(desc, key, run_id, max_age, provider);

		MemoryContextSwitchTo(oldcxt);
	}

	funcctx = SRF_PERCALL_SETUP();
	if (funcctx->call_cntr == 0)
		SRF_RETURN_NEXT(funcctx, HeapTupleGetDatum((HeapTuple) funcctx->user_fctx));
	SRF_RETURN_DONE(funcctx);
}
