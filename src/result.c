/*-------------------------------------------------------------------------
 *
 * result.c
 *	  The row types the row-returning functions return, looked up once per
 *	  backend, and rows of the managed tables copied into them.
 *
 * get_call_result_type() rebuilds a RETURNS TABLE function's row type from
 * pg_proc and registers it again on every call (a tenth of a resume).  The
 * blessed descriptor is kept here per function instead, in a context that
 * lives as long as the backend, and looked up again only after pg_proc or a
 * relation changed (ALTER EXTENSION UPDATE, CREATE OR REPLACE, ALTER TABLE,
 * ANALYZE).  A descriptor that may still be in use is never freed: when the
 * new one is equal it is kept and the new one freed; when it differs (DDL
 * on the extension's own objects, which is rare) the old one stays behind.
 *
 *-------------------------------------------------------------------------
 */
#include "sandbox_store.h"

#include "access/htup_details.h"
#include "funcapi.h"
#include "catalog/pg_type_d.h"
#include "nodes/execnodes.h"
#include "parser/parse_coerce.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/syscache.h"

/* Twice the functions that return a row type. */
#define RESULT_CACHE_SIZE 8

typedef struct ResultDesc
{
	Oid fn_oid;
	bool valid;
	TupleDesc desc;
} ResultDesc;

static ResultDesc result_cache[RESULT_CACHE_SIZE];
static int result_cache_used = 0;
static int result_cache_next_evict = 0;
static MemoryContext result_context = NULL;

static void
invalidate_all(void)
{
	for (int i = 0; i < result_cache_used; i++)
		result_cache[i].valid = false;
}

static void
functions_changed(Datum arg, int cacheid, uint32 hashvalue)
{
	invalidate_all();
}

static void
relation_changed(Datum arg, Oid relid)
{
	invalidate_all();
}

void
sb_result_init(void)
{
	CacheRegisterSyscacheCallback(PROCOID, functions_changed, (Datum) 0);
	CacheRegisterRelcacheCallback(relation_changed, (Datum) 0);
}

/*
 * The blessed row type of the calling function's result: natts columns, or
 * an error.  Valid for the rest of the backend's life; do not modify it.
 */
TupleDesc
sb_result_desc(FunctionCallInfo fcinfo, const char *fname, int natts_min, int natts_max)
{
	Oid fn_oid = fcinfo->flinfo->fn_oid;
	ResultDesc *entry = NULL;
	TupleDesc desc;
	MemoryContext oldcxt;

	for (int i = 0; i < result_cache_used; i++)
		if (result_cache[i].fn_oid == fn_oid)
		{
			entry = &result_cache[i];
			if (entry->valid)
				return entry->desc;
			break;
		}

	/* a call that waited: the extension may have been dropped meanwhile */
	sb_check_function(fn_oid);
	if (result_context == NULL)
		result_context = AllocSetContextCreate(CacheMemoryContext, "sandbox_store result types",
											   ALLOCSET_SMALL_SIZES);
	oldcxt = MemoryContextSwitchTo(result_context);
	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE ||
		desc->natts < natts_min || desc->natts > natts_max)
		elog(ERROR, "%s must return a row of %d to %d columns", fname, natts_min, natts_max);
	desc = BlessTupleDesc(desc);
	MemoryContextSwitchTo(oldcxt);

	if (entry == NULL)
	{
		/*
		 * A new function (or a new OID after the extension was recreated):
		 * a free slot, else the oldest, whose descriptor is left behind.
		 */
		if (result_cache_used < RESULT_CACHE_SIZE)
			entry = &result_cache[result_cache_used++];
		else
		{
			entry = &result_cache[result_cache_next_evict];
			result_cache_next_evict = (result_cache_next_evict + 1) % RESULT_CACHE_SIZE;
		}
		entry->fn_oid = fn_oid;
		entry->desc = NULL;
	}
	if (entry->desc != NULL && equalTupleDescs(entry->desc, desc))
		FreeTupleDesc(desc);
	else
		entry->desc = desc;
	entry->valid = true;
	return entry->desc;
}

/*
 * The descriptor to form the one row of a function that returns a single
 * row of the table's type (sandbox_upsert) in, given desc, that type as it
 * is now that the call holds the table.  Called in FROM, the statement was
 * planned with the row type as it was then, and the executor requires the
 * row to match it: an admin's ADD or DROP COLUMN committed while the call
 * waited for the table would fail the statement (42804, or XX000 for a
 * dropped column).  Then the row is formed in the planned shape instead, as
 * a record type registered once per call site.  Elsewhere (a select list),
 * or when nothing changed, desc itself.
 */
TupleDesc
sb_result_planned_desc(FunctionCallInfo fcinfo, TupleDesc desc)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	TupleDesc planned;
	MemoryContext oldcxt;

	if (rsinfo == NULL || !IsA(rsinfo, ReturnSetInfo) || rsinfo->expectedDesc == NULL)
		return desc;
	planned = rsinfo->expectedDesc;
	if (planned->natts == desc->natts)
	{
		int i = 0;

		while (i < desc->natts &&
			   TupleDescAttr(planned, i)->atttypid == TupleDescAttr(desc, i)->atttypid &&
			   TupleDescAttr(planned, i)->attisdropped == TupleDescAttr(desc, i)->attisdropped)
			i++;
		if (i == desc->natts)
			return desc;
	}
	if (fcinfo->flinfo->fn_extra != NULL)
		return (TupleDesc) fcinfo->flinfo->fn_extra;
	oldcxt = MemoryContextSwitchTo(fcinfo->flinfo->fn_mcxt);
	planned = CreateTupleDescCopy(planned);
	planned->tdtypeid = RECORDOID;
	planned->tdtypmod = -1;
	planned = BlessTupleDesc(planned);
	MemoryContextSwitchTo(oldcxt);
	fcinfo->flinfo->fn_extra = planned;
	return planned;
}

/*
 * A column of the statement's row type whose type the table no longer has:
 * retyped by an admin after the statement was planned (or prepared).
 * PostgreSQL's executor usually refuses such a statement before the call
 * ("attribute N of type record has wrong type"), since a retype rewrites the
 * table; this keeps a value of the new type from ever being read as one of
 * the old if it does not.
 */
static void
report_column_retyped(Form_pg_attribute att, Oid now)
{
	ereport(
		ERROR,
		(errcode(ERRCODE_DATATYPE_MISMATCH),
		 errmsg(
			 "column \"%s\" of sandbox_store.instances changed type since the statement was planned",
			 NameStr(att->attname)),
		 errdetail("The statement expects type %s; the column now has type %s.  Retyping a column "
				   "of the managed tables is not supported.",
				   format_type_be(att->atttypid), format_type_be(now)),
		 errhint("Prepare the statement again.")));
}

/*
 * The values of a row of desc, taken from src (described by srcdesc) column
 * by column name, into values/nulls (desc->natts of each).
 *
 * The functions that return rows of sandbox_store.instances return its row
 * type, which follows the table: an admin may have added columns (returned
 * with their stored values) or dropped some (dropped columns stay in the
 * row type, null, and are absent from a statement's result), and a record
 * column dropped and added again sits at the end.  So a row is never copied
 * by position.  A column of desc that the row lacks is null.  When both descriptors list the same live columns in the same
 * order (the usual case) the names are compared once per column.
 */
void
sb_result_values(TupleDesc desc, HeapTuple src, TupleDesc srcdesc, Datum *values, bool *nulls)
{
	int next = 0; /* source column after the previous match */

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		int found = -1;

		values[i] = (Datum) 0;
		nulls[i] = true;
		if (att->attisdropped)
			continue;
		for (int n = 0; n < srcdesc->natts && found < 0; n++)
		{
			int j = (next + n) % srcdesc->natts;
			Form_pg_attribute satt = TupleDescAttr(srcdesc, j);

			if (!satt->attisdropped && namestrcmp(&satt->attname, NameStr(att->attname)) == 0)
				found = j;
		}
		/*
		 * Not in the row: a column dropped after the caller's row type was
		 * fixed (a prepared statement, DDL committed while this call
		 * waited).  It no longer holds anything: null.
		 */
		if (found < 0)
			continue;
		if (TupleDescAttr(srcdesc, found)->atttypid != att->atttypid &&
			!IsBinaryCoercible(TupleDescAttr(srcdesc, found)->atttypid, att->atttypid))
			report_column_retyped(att, TupleDescAttr(srcdesc, found)->atttypid);
		values[i] = heap_getattr(src, found + 1, srcdesc, &nulls[i]);
		next = found + 1;
	}
}
