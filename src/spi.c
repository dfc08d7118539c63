/*-------------------------------------------------------------------------
 *
 * spi.c
 *	  How every statement of sandbox_store runs: prepared once per backend
 *	  (SPI_prepare + SPI_keepplan) and executed as the owner of the managed
 *	  tables, in a restricted security context.
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
#include "catalog/pg_class.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/inval.h"
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
		elog(ERROR, "sandbox_store: no owner found for sandbox_store.instances");
	return owner;
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

/* Become the tables' owner; on error, transaction abort restores the user. */
static void
as_owner_begin(Oid *save_userid, int *save_sec_context)
{
	GetUserIdAndSecContext(save_userid, save_sec_context);
	SetUserIdAndSecContext(get_table_owner(), *save_sec_context | SECURITY_LOCAL_USERID_CHANGE |
												  SECURITY_RESTRICTED_OPERATION);
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
	Oid save_userid;
	int save_sec_context;
	int rc;

	as_owner_begin(&save_userid, &save_sec_context);
	if (snapshot != InvalidSnapshot)
		rc =
			SPI_execute_snapshot(plan, args, nulls, snapshot, InvalidSnapshot, read_only, false, 0);
	else
		rc = SPI_execute_plan(plan, args, nulls, read_only, 0);
	SetUserIdAndSecContext(save_userid, save_sec_context);

	if (rc < 0)
		elog(ERROR, "SPI_execute_plan failed for \"%s\": %s", stmt->sql,
			 SPI_result_code_string(rc));
	return SPI_processed;
}

/* Open a cursor over one statement, as the tables' owner. */
Portal
sb_spi_cursor_open(SbStatement *stmt, Datum *args, const char *nulls)
{
	SPIPlanPtr plan = sb_spi_plan(stmt);
	Oid save_userid;
	int save_sec_context;
	Portal portal;

	as_owner_begin(&save_userid, &save_sec_context);
	portal = SPI_cursor_open(NULL, plan, args, nulls, false);
	SetUserIdAndSecContext(save_userid, save_sec_context);
	return portal;
}

/* Fetch from a cursor, as the tables' owner (the query runs as it fetches). */
uint64
sb_spi_cursor_fetch(Portal portal, long count)
{
	Oid save_userid;
	int save_sec_context;

	as_owner_begin(&save_userid, &save_sec_context);
	SPI_cursor_fetch(portal, true, count);
	SetUserIdAndSecContext(save_userid, save_sec_context);
	return SPI_processed;
}
