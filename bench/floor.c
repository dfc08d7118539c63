/*
 * bench/floor.c: empty C functions with the signatures and result types of
 * sandbox_ensure, sandbox_get and sandbox_upsert, for bench/profile.sh.  What
 * they cost per call is what PostgreSQL charges for calling a C function
 * from SQL at all (argument expressions, the FunctionScan node, its result
 * type and tuplestore): the floor under the extension's own functions.
 * Built by profile.sh into its private cluster's directory and loaded from
 * there (CREATE FUNCTION ... AS '<path>'); never installed.
 */
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"

PG_MODULE_MAGIC;

PG_FUNCTION_INFO_V1(floor_srf);
PG_FUNCTION_INFO_V1(floor_row);

/* An SRF that returns no rows (as sandbox_ensure and sandbox_get are SRFs). */
Datum
floor_srf(PG_FUNCTION_ARGS)
{
	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	return (Datum) 0;
}

/* A function returning a composite, here NULL (as sandbox_upsert returns a row). */
Datum
floor_row(PG_FUNCTION_ARGS)
{
	PG_RETURN_NULL();
}
