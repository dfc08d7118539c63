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
		values[i] = heap_getattr(src, found + 1, srcdesc, &nulls[i]);
		next = found + 1;
	}
}
