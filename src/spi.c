/*-------------------------------------------------------------------------
 *
 * spi.c
 *	  How every statement of sandbox_store runs: prepared once per backend
 *	  (SPI_prepare + SPI_keepplan), planned with fixed planner settings
 *	  whatever the caller's, and executed as the owner of the managed
 *	  tables, in a restricted security context; each result freed once the
 *	  next statement runs.
 *
 * Callers get no privilege on the tables.  EXECUTE on a function is the
 * gate; each statement then runs as the owner of sandbox_store.instances (as
 * pg_cron does), instead of making the functions SECURITY DEFINER: the effect
 * is the same without a per-call search_path switch.  Statements name
 * everything schema-qualified, with OPERATOR(pg_catalog.x), so no search_path
 * can redirect them.
 *
 *-------------------------------------------------------------------------
 */
#include "sandbox_store.h"

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/plancache.h"
#include "utils/syscache.h"

/*
 * The owner to run statements as (catalog.c keeps it with the relations).
 * Kept in a local: later catalog accesses may take in invalidations, and a
 * statement run as no role fails its permission checks.
 */
static Oid
get_table_owner(void)
{
	const SbRelations *rels = sb_relations();
	Oid owner = rels->owner;

	if (rels->row_security)
		sb_report_row_security();
	if (!OidIsValid(rels->instances))
		sb_report_missing_table("instances");
	if (!OidIsValid(owner))
		elog(ERROR, "no owner found for sandbox_store.instances");
	return owner;
}

/*
 * The result of the last statement sb_spi_execute ran in the current
 * connection: freed when the next one runs.  SPI keeps every result of a
 * connection until SPI_finish, and a call that waits for a claim runs a
 * statement on every poll (a reap, a few per record), so kept results would
 * grow the call's memory without bound.  Callers read a statement's result
 * before they run the next one; a result to keep longer is copied out
 * (SPI_copytuple and the like copy to the context the connection was made
 * from).  Results that other SPI calls make (a cursor's batch) are not
 * touched here.
 */
static SPITupleTable *last_result = NULL;

/*
 * The one SPI convention: an SQL entry point connects (sb_spi_connect) after
 * its arguments are checked and finishes before it returns; every helper
 * that runs statements (claims.c, store.c, take.c's loops) runs them in the
 * caller's connection and never connects itself.  Results copied out of SPI
 * land in the context the connection was made from.
 */
void
sb_spi_connect(void)
{
	int rc = SPI_connect();

	if (rc != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed: %s", SPI_result_code_string(rc));
	/* left over from a call that ended in an error (its connection is gone) */
	last_result = NULL;
	sb_call_begin();
}

void
sb_spi_finish(void)
{
	int rc;

	last_result = NULL;
	sb_call_end();
	rc = SPI_finish();
	if (rc != SPI_OK_FINISH)
		elog(ERROR, "SPI_finish failed: %s", SPI_result_code_string(rc));
}

/* The statement's plan, prepared on first use and kept for the backend. */
SPIPlanPtr
sb_spi_plan(SbStatement *stmt)
{
	if (stmt->plan == NULL)
	{
		SPIPlanPtr plan = SPI_prepare(stmt->sql, stmt->nargs, stmt->argtypes);

		if (plan == NULL)
			elog(ERROR, "SPI_prepare failed for \"%s\": %s", stmt->sql,
				 SPI_result_code_string(SPI_result));
		if (SPI_keepplan(plan) != 0)
			elog(ERROR, "SPI_keepplan failed");
		stmt->plan = plan;
	}
	return stmt->plan;
}

/*
 * Become the tables' owner; on error, transaction abort restores the user.
 * The statements here, and the direct insert of a run log's entries
 * (direct.c), which may evaluate an admin's index expressions, run so.
 *
 * SECURITY_RESTRICTED_OPERATION without a GUC nest level (which PostgreSQL
 * adds where it runs user code as another role, e.g. index expressions, so
 * that a SET inside is undone): the statements run here are this file's
 * fixed SQL, naming only pg_catalog functions and operators and the
 * extension's own objects, so no code of anyone else's runs in them to SET
 * anything.  (A trigger an admin adds to a managed table would; the
 * operations guide says not to.)
 */
void
sb_as_owner_begin(Oid *save_userid, int *save_sec_context)
{
	GetUserIdAndSecContext(save_userid, save_sec_context);
	SetUserIdAndSecContext(get_table_owner(), *save_sec_context | SECURITY_LOCAL_USERID_CHANGE |
												  SECURITY_RESTRICTED_OPERATION);
}

/* Back to the user sb_as_owner_begin saved. */
void
sb_as_owner_end(Oid save_userid, int save_sec_context)
{
	SetUserIdAndSecContext(save_userid, save_sec_context);
}

/*
 * Every statement sb_spi_execute runs reads one key, or one thread's
 * records, and has an index for it; only the reaper's sweep (a cursor) reads
 * the whole table.  The planner does not always see that: on a table it
 * believes empty (VACUUM of an empty table leaves 0 pages and 0 tuples) a
 * sequential scan costs nothing, and the generic plan made then is kept
 * while the table grows, scanning all of it on every call.  And a plan is
 * made with the settings of whichever caller's call happens to make it (a
 * pooled connection serves many), then kept for every caller after.
 *
 * So plans are made with these settings, whatever the caller's, the way
 * PostgreSQL's own foreign-key checks set a GUC around their SPI queries:
 * index probes only, no parallel workers (a Gather on every call) and no JIT
 * compilation (decided when planning, paid on every run).  The settings are
 * set, in a GUC nest level, only for a run that makes a plan; a kept plan
 * runs without their cost.
 */
static const struct
{
	const char *name;
	const char *value;
} planner_settings[] = {
	{"enable_seqscan", "off"},
	{"enable_indexscan", "on"},
	{"enable_indexonlyscan", "on"},
	{"enable_bitmapscan", "on"},
	{"max_parallel_workers_per_gather", "0"},
	{SB_GUC_DEBUG_PARALLEL_QUERY, "off"},
	{"jit", "off"},
};

/* The statement's one CachedPlanSource (each statement is one query). */
static CachedPlanSource *
plan_source(SPIPlanPtr plan)
{
	List *sources = SPI_plan_get_plan_sources(plan);

	if (list_length(sources) != 1)
		elog(ERROR, "a statement has %d plan sources, not 1", list_length(sources));
	return linitial(sources);
}

/*
 * Whether the statement's next run makes a plan, as PostgreSQL's plan cache
 * will decide it (GetCachedPlan): the first run after an invalidation (an
 * ANALYZE or VACUUM of a table it reads, DDL), or after the search_path
 * changed (RevalidateCachedQuery compares the search_path the statement was
 * analyzed under with the current one, as the role it runs as); and a run
 * that makes a custom plan rather than use the generic one
 * (choose_custom_plan: the first five runs, and whenever plan_cache_mode or
 * the costs say so).  Called as the tables' owner, after invalidations were
 * taken in.
 */
static bool
will_plan(CachedPlanSource *source, bool has_params)
{
	if (!source->is_valid || source->gplan == NULL || !source->gplan->is_valid)
		return true;
	if (source->search_path != NULL && !sb_search_path_matches(source->search_path))
		return true;
	if (!has_params || plan_cache_mode == PLAN_CACHE_MODE_FORCE_GENERIC_PLAN)
		return false;
	if (plan_cache_mode == PLAN_CACHE_MODE_FORCE_CUSTOM_PLAN || source->num_custom_plans < 5)
		return true;
	return source->generic_cost >= source->total_custom_cost / source->num_custom_plans;
}

/* Set planner_settings for a run that makes a plan; returns the nest level. */
static int
plan_by_index_begin(void)
{
	int nest_level = NewGUCNestLevel();

	for (int i = 0; i < lengthof(planner_settings); i++)
		(void) set_config_option(planner_settings[i].name, planner_settings[i].value, PGC_USERSET,
								 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	return nest_level;
}

static void
plan_by_index_end(int nest_level)
{
	if (nest_level > 0)
		AtEOXact_GUC(true, nest_level);
}

/*
 * A run that was not expected to plan made a plan all the same, with the
 * caller's settings: an invalidation that arrived while PostgreSQL locked
 * the statement's tables (DDL or an ANALYZE committed since this call
 * looked).  The plan is dropped, so the next run prepares the statement
 * again and plans it with planner_settings.
 */
static void
forget_plan(SbStatement *stmt)
{
	SPIPlanPtr plan = stmt->plan;

	stmt->plan = NULL;
	if (SPI_freeplan(plan) != 0)
		elog(ERROR, "SPI_freeplan failed");
}

/*
 * Run one statement as the tables' owner.  The caller is connected to SPI.
 * snapshot is InvalidSnapshot for SPI's usual choice (a fresh one for a
 * volatile caller in READ COMMITTED); read_only runs in the caller's snapshot.
 * nulls may be NULL when no argument is NULL.  Returns SPI_processed.
 */
uint64
sb_spi_execute(SbStatement *stmt, Datum *args, const char *nulls, bool read_only, Snapshot snapshot)
{
	SPIPlanPtr plan = sb_spi_plan(stmt);
	CachedPlanSource *source = plan_source(plan);
	int nest_level = 0;
	int generation;
	Oid save_userid;
	int save_sec_context;
	int rc;

	if (last_result != NULL)
	{
		SPI_freetuptable(last_result);
		last_result = NULL;
	}

	/*
	 * Take in invalidations now, as the plan cache would while locking the
	 * tables, so that will_plan sees them; and stop if they dropped the
	 * extension while the call waited.  Again after the statement, which
	 * may have waited for its tables.
	 */
	sb_call_check();
	sb_as_owner_begin(&save_userid, &save_sec_context);
	if (will_plan(source, stmt->nargs > 0))
		nest_level = plan_by_index_begin();
	generation = source->generation;
	if (snapshot != InvalidSnapshot)
		rc =
			SPI_execute_snapshot(plan, args, nulls, snapshot, InvalidSnapshot, read_only, false, 0);
	else
		rc = SPI_execute_plan(plan, args, nulls, read_only, 0);
	sb_as_owner_end(save_userid, save_sec_context);
	plan_by_index_end(nest_level);
	/* (the source's generation counts the plans made for it) */
	if (nest_level == 0 && plan_source(plan)->generation != generation)
		forget_plan(stmt);
	sb_call_check();

	if (rc != stmt->expect)
		elog(ERROR, "SPI_execute_plan returned %s for \"%s\", not %s", SPI_result_code_string(rc),
			 stmt->sql, SPI_result_code_string(stmt->expect));
	last_result = SPI_tuptable;
	return SPI_processed;
}

/*
 * Column attnum (1-based) of row `row` of table (a result of SPI), which the
 * statement names name and which cannot be NULL.  Statements declare their
 * columns' order with constants; reading them checks the name, so a
 * statement and its reader cannot drift apart unnoticed.
 */
Datum
sb_spi_value(const SPITupleTable *table, uint64 row, int attnum, const char *name)
{
	TupleDesc desc = table->tupdesc;
	bool isnull;
	Datum value;

	if (attnum < 1 || attnum > desc->natts ||
		strcmp(NameStr(TupleDescAttr(desc, attnum - 1)->attname), name) != 0)
		elog(ERROR, "column %d of a result is not \"%s\"", attnum, name);
	value = SPI_getbinval(table->vals[row], desc, attnum, &isnull);
	if (isnull)
		elog(ERROR, "column \"%s\" of a result is NULL", name);
	return value;
}

/* Open a cursor over one statement, as the tables' owner. */
Portal
sb_spi_cursor_open(SbStatement *stmt, Datum *args, const char *nulls)
{
	SPIPlanPtr plan = sb_spi_plan(stmt);
	Oid save_userid;
	int save_sec_context;
	Portal portal;

	sb_call_check();
	sb_as_owner_begin(&save_userid, &save_sec_context);
	portal = SPI_cursor_open(NULL, plan, args, nulls, false);
	sb_as_owner_end(save_userid, save_sec_context);
	return portal;
}

/* Fetch from a cursor, as the tables' owner (the query runs as it fetches). */
uint64
sb_spi_cursor_fetch(Portal portal, long count)
{
	Oid save_userid;
	int save_sec_context;

	sb_as_owner_begin(&save_userid, &save_sec_context);
	SPI_cursor_fetch(portal, true, count);
	sb_as_owner_end(save_userid, save_sec_context);
	sb_call_check();
	return SPI_processed;
}
