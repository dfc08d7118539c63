/*-------------------------------------------------------------------------
 *
 * run_log.c
 *	  The C edition's run_log_append: chunks appended to a run's log as its
 *	  next entries, fenced by the run's driver epoch.
 *
 * The rest of the runs and their logs is SQL (src/sql/parts/shared/runs/); the
 * SQL edition's run_log_append is PL/pgSQL of the same contract
 * (src/sql/parts/sql-edition/run_log.run_log_append.sql).  This one is C because the
 * append is the hot path of a durable run and a benchmark shows the
 * difference (BENCHMARKS.md, "Run logs"): the checks read the jsonb once,
 * the statements are prepared once per backend, the seqs are counted rather
 * than returned by the insert, and where the tables are as the extension
 * made them the runs row is read and the entries are inserted without a
 * statement (direct.c).  The checks, their order and
 * every message are the PL/pgSQL function's, as docs/reference.md
 * documents them; both editions run the same tests.
 *
 * The protocol (docs/reference.md, "The driver epoch fence"): the log
 * row's upsert locks the row (appenders of one run are serialized, and
 * run_claim takes that lock before it raises the epoch), then the runs row
 * is read with a new snapshot, so a claim committed before the lock is seen
 * and one after it waits for this transaction.
 *
 * A watched log's append notifies when it commits, unless the caller passes
 * notify false and wakes the readers itself after the commit
 * (run_log_wake): a notifying commit is serialized with every other across
 * the server, its WAL flush included (docs/reference.md, "Waking readers").
 *
 * Three entry points: 1.7.0's (sandbox_run_log_append_v1_7_0, with the
 * notify argument); 1.6.0's, which serves a database still at 1.6.0 (three
 * arguments: a watched log's append always notifies); both refuse an append
 * without an epoch once the run was ever claimed (max_driver_epoch, which a
 * clear of driver_epoch keeps).  1.5.1's serves a database still at 1.5.1 or
 * 1.5.2 (no such column: their run_update cannot clear the epoch): it
 * refuses one while the run has a current epoch.
 *
 *-------------------------------------------------------------------------
 */
#include "sandbox_store.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "commands/async.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/jsonb.h"

/*
 * The greatest seq: 2^53 - 1, the largest whole number a JavaScript number
 * holds exactly (an offset's position in the client).
 */
#define RUN_LOG_MAX_SEQ INT64CONST(9007199254740991)

/* The channel a watched log's writes notify (run_log_watch). */
#define RUN_LOG_CHANNEL "sandbox_store_run_log"

/*
 * The log row, locked and its tail moved past n entries; returns the seq
 * before them, whether the log is closed and whether a reader watches it.
 */
static SbStatement upsert_log = {
	"INSERT INTO sandbox_store.run_logs AS l (run_id, last_seq, updated_at)"
	" VALUES ($1, $2, pg_catalog.clock_timestamp())"
	" ON CONFLICT ON CONSTRAINT run_logs_pkey DO UPDATE"
	" SET last_seq = l.last_seq OPERATOR(pg_catalog.+) EXCLUDED.last_seq,"
	" updated_at = EXCLUDED.updated_at"
	" RETURNING (l.last_seq OPERATOR(pg_catalog.-) $2)::pg_catalog.int8 AS last_before,"
	" l.closed_at IS NOT NULL AS closed, l.watched::pg_catalog.bool AS watched",
	2,
	{TEXTOID, INT8OID},
	SPI_OK_INSERT_RETURNING,
	NULL};
#define Anum_upsert_last_before 1
#define Anum_upsert_closed      2
#define Anum_upsert_watched     3

/*
 * The run's status, driver epoch and the highest epoch it ever had (no row:
 * no record); at 1.5.1 and 1.5.2, which have no max_driver_epoch, the
 * first two.  The statements cast what they return to the types this file
 * reads, whatever an admin did to the columns.
 */
static SbStatement read_run = {"SELECT r.status::pg_catalog.text AS status,"
							   " r.driver_epoch::pg_catalog.int8 AS driver_epoch,"
							   " r.max_driver_epoch::pg_catalog.int8 AS max_driver_epoch"
							   " FROM ONLY sandbox_store.runs r"
							   " WHERE r.run_id OPERATOR(pg_catalog.=) $1",
							   1,
							   {TEXTOID},
							   SPI_OK_SELECT,
							   NULL};
static SbStatement read_run_v1_5_1 = {"SELECT r.status::pg_catalog.text AS status,"
									  " r.driver_epoch::pg_catalog.int8 AS driver_epoch"
									  " FROM ONLY sandbox_store.runs r"
									  " WHERE r.run_id OPERATOR(pg_catalog.=) $1",
									  1,
									  {TEXTOID},
									  SPI_OK_SELECT,
									  NULL};
#define Anum_run_status           1
#define Anum_run_driver_epoch     2
#define Anum_run_max_driver_epoch 3

/* The entries at seqs $2 + 1, $2 + 2, ... in the array's order. */
static SbStatement insert_entries = {
	"INSERT INTO sandbox_store.run_log_entries (run_id, seq, chunk)"
	" SELECT $1, $2 OPERATOR(pg_catalog.+) x.i, x.c"
	" FROM pg_catalog.jsonb_array_elements($3) WITH ORDINALITY x(c, i)",
	3,
	{TEXTOID, INT8OID, JSONBOID},
	SPI_OK_INSERT,
	NULL};

SB_NORETURN_BEFORE static void report_invalid_run_id(const text *run_id) SB_NORETURN_AFTER;
SB_NORETURN_BEFORE static void report_not_an_array(const Jsonb *chunks) SB_NORETURN_AFTER;
SB_NORETURN_BEFORE static void report_not_an_object(void) SB_NORETURN_AFTER;
SB_NORETURN_BEFORE static void report_invalid_epoch(int64 epoch) SB_NORETURN_AFTER;
SB_NORETURN_BEFORE static void report_missing_notify(void) SB_NORETURN_AFTER;
SB_NORETURN_BEFORE static void report_stale_epoch(const text *run_id, bool given, int64 epoch,
												  bool has_record, bool claimed, int64 current,
												  int64 highest) SB_NORETURN_AFTER;
SB_NORETURN_BEFORE static void report_log_closed(const text *run_id) SB_NORETURN_AFTER;
SB_NORETURN_BEFORE static void report_run_finished(const text *run_id,
												   const char *status) SB_NORETURN_AFTER;
SB_NORETURN_BEFORE static void report_log_full(const text *run_id, int64 last,
											   int n) SB_NORETURN_AFTER;

/* A run id as to_jsonb writes it (a JSON string). */
static char *
json_id(const text *run_id)
{
	StringInfoData buf;

	initStringInfo(&buf);
	escape_json(&buf, text_to_cstring(run_id));
	return buf.data;
}

/* 22023: the run id is missing, empty or longer than 1024 bytes. */
static void
report_invalid_run_id(const text *run_id)
{
	ereport(
		ERROR,
		(errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("invalid run id"),
		 run_id == NULL
			 ? errdetail("A run id is a string of 1 to %d bytes; the value given is missing.",
						 SB_MAX_TEXT_BYTES)
			 : errdetail("A run id is a string of 1 to %d bytes; the value given is %d bytes long.",
						 SB_MAX_TEXT_BYTES, (int) VARSIZE_ANY_EXHDR(run_id))));
	pg_unreachable();
}

/* The name jsonb_typeof gives the type of a jsonb that is not an array. */
static const char *
jsonb_type_name(const Jsonb *j)
{
	JsonbValue v;

	if (JB_ROOT_IS_OBJECT(j))
		return "object";
	if (!JB_ROOT_IS_SCALAR(j) || !JsonbExtractScalar((JsonbContainer *) &j->root, &v))
		return "array";
	switch (v.type)
	{
		case jbvNull:
			return "null";
		case jbvString:
			return "string";
		case jbvNumeric:
			return "number";
		case jbvBool:
			return "boolean";
		default:
			elog(ERROR, "unexpected jsonb scalar type %d", (int) v.type);
	}
	return NULL; /* keep the compiler quiet */
}

/* 22023: chunks is not a JSON array (or missing). */
static void
report_not_an_array(const Jsonb *chunks)
{
	ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("invalid chunks"),
					errdetail("chunks is a JSON array of JSON objects; the value given is %s.",
							  chunks == NULL ? "missing" : jsonb_type_name(chunks))));
	pg_unreachable();
}

/* 22023: an element of chunks is not a JSON object. */
static void
report_not_an_object(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("invalid chunks"),
			 errdetail("chunks is a JSON array of JSON objects; an element is not an object.")));
	pg_unreachable();
}

/* 22023: an epoch below 1. */
static void
report_invalid_epoch(int64 epoch)
{
	ereport(
		ERROR,
		(errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("invalid epoch"),
		 errdetail("An epoch is 1 or more (run_claim returns it); the value given is " INT64_FORMAT
				   ".",
				   epoch)));
	pg_unreachable();
}

/* 22023: notify is NULL. */
static void
report_missing_notify(void)
{
	ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("invalid notify"),
					errdetail("notify is true (a watched log's append notifies when it commits) or "
							  "false (the caller wakes the readers with run_log_wake after the "
							  "commit); the value given is missing.")));
	pg_unreachable();
}

/*
 * SB001: the write carried epoch (given) or none, and the run's current
 * epoch (claimed) is another, or the run has no record.  highest: the
 * highest epoch the run ever had (0: never claimed), which the detail
 * names when the run's epoch was cleared.
 */
static void
report_stale_epoch(const text *run_id, bool given, int64 epoch, bool has_record, bool claimed,
				   int64 current, int64 highest)
{
	char *id = json_id(run_id);

	if (!given && claimed)
		ereport(ERROR,
				(errcode(ERRCODE_SB_CLAIM_LOST),
				 errmsg("the driver epoch of run %s is not current", id),
				 errdetail("The write carried no epoch, and a driver has claimed the run: its "
						   "current epoch is " INT64_FORMAT ".  Nothing was changed.",
						   current)));
	else if (!given)
		ereport(ERROR, (errcode(ERRCODE_SB_CLAIM_LOST),
						errmsg("the driver epoch of run %s is not current", id),
						errdetail("The write carried no epoch, and a driver has claimed the run: "
								  "its epoch was cleared (the highest it had is " INT64_FORMAT
								  ").  Nothing was changed.",
								  highest)));
	else if (!has_record)
		ereport(ERROR, (errcode(ERRCODE_SB_CLAIM_LOST),
						errmsg("the driver epoch of run %s is not current", id),
						errdetail("The write carried epoch " INT64_FORMAT
								  ", and the run has no record: it was never claimed (no current "
								  "epoch).  Nothing was changed.",
								  epoch)));
	else if (!claimed && highest > 0)
		ereport(ERROR, (errcode(ERRCODE_SB_CLAIM_LOST),
						errmsg("the driver epoch of run %s is not current", id),
						errdetail("The write carried epoch " INT64_FORMAT
								  ", and the run has no current epoch: it was cleared (the highest "
								  "it had is " INT64_FORMAT ").  Nothing was changed.",
								  epoch, highest)));
	else if (!claimed)
		ereport(ERROR, (errcode(ERRCODE_SB_CLAIM_LOST),
						errmsg("the driver epoch of run %s is not current", id),
						errdetail("The write carried epoch " INT64_FORMAT
								  ", and the run was never claimed (no current epoch).  Nothing "
								  "was changed.",
								  epoch)));
	else
		ereport(ERROR, (errcode(ERRCODE_SB_CLAIM_LOST),
						errmsg("the driver epoch of run %s is not current", id),
						errdetail("The write carried epoch " INT64_FORMAT
								  "; the current epoch is " INT64_FORMAT ".  Nothing was changed.",
								  epoch, current)));
	pg_unreachable();
}

/* SBR02: the log is closed. */
static void
report_log_closed(const text *run_id)
{
	ereport(ERROR, (errcode(ERRCODE_SB_RUN_FINISHED),
					errmsg("the log of run %s is closed", json_id(run_id)),
					errdetail("A closed log takes no more entries.  Nothing was changed.")));
	pg_unreachable();
}

/*
 * Whether a run's status is a finished one: completed, failed or aborted.
 * The SQL of both editions asks sandbox_store_internal._run_finished
 * (src/sql/parts/shared/runs/_run_finished.sql), which lists the same three.
 */
static bool
run_status_finished(const char *status)
{
	return strcmp(status, "completed") == 0 || strcmp(status, "failed") == 0 ||
		   strcmp(status, "aborted") == 0;
}

/* SBR02: the run is finished (completed, failed or aborted). */
static void
report_run_finished(const text *run_id, const char *status)
{
	ereport(ERROR,
			(errcode(ERRCODE_SB_RUN_FINISHED), errmsg("run %s is finished", json_id(run_id)),
			 errdetail("Its status is %s: its log takes no more entries.  Nothing was changed.",
					   status)));
	pg_unreachable();
}

/* 22003: the new entries would take seqs past RUN_LOG_MAX_SEQ. */
static void
report_log_full(const text *run_id, int64 last, int n)
{
	ereport(
		ERROR,
		(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
		 errmsg("the log of run %s is full", json_id(run_id)),
		 errdetail("Its last seq is " INT64_FORMAT ", and the entries appended would end at "
				   "seq " INT64_FORMAT ", past 9007199254740991 (2^53 - 1), the greatest "
				   "seq.  Nothing was changed.",
				   last, last + n),
		 errhint(
			 "A log reaches its end only through run_log_upsert of a seq near it; close the log.")));
	pg_unreachable();
}

/* The number of elements of chunks, a JSON array of JSON objects; 22023 otherwise. */
static int
count_chunks(Jsonb *chunks)
{
	JsonbIterator *it;
	JsonbValue v;
	JsonbIteratorToken token;

	if (!JB_ROOT_IS_ARRAY(chunks) || JB_ROOT_IS_SCALAR(chunks))
		report_not_an_array(chunks);
	it = JsonbIteratorInit(&chunks->root);
	while ((token = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		CHECK_FOR_INTERRUPTS();
		if (token == WJB_ELEM && (v.type != jbvBinary || !JsonContainerIsObject(v.val.binary.data)))
			report_not_an_object();
	}
	return (int) JB_ROOT_COUNT(chunks);
}

/* What the fence needs of a run's row. */
typedef struct SbRun
{
	bool has_record;   /* the run has a runs row */
	bool claimed;      /* it has a current epoch */
	bool ever_claimed; /* it has a highest epoch */
	int64 current;
	int64 highest;
	char *status;
} SbRun;

/* Column attnum of the statement's one row, an int8: whether it is set, and its value. */
static bool
run_int8(int attnum, int64 *value)
{
	bool isnull;
	Datum d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, attnum, &isnull);

	if (!isnull)
		*value = DatumGetInt64(d);
	return !isnull;
}

/* The one column of the runs row read directly that is named name and of type typid, or 0. */
static int
run_column(TupleDesc desc, const char *name, Oid typid)
{
	int attnum = SPI_fnumber(desc, name);

	if (attnum <= 0 || TupleDescAttr(desc, attnum - 1)->atttypid != typid)
		return 0;
	return attnum;
}

/*
 * The runs row of run_id read directly (direct.c), with the snapshot the
 * statement read_run would take once it holds its lock (a new one at READ
 * COMMITTED; the transaction's, seeing its earlier commands, otherwise).
 * False when the row is not what the statement would return as it is: a
 * column retyped, dropped or NULL where the table says NOT NULL, or a
 * primary key on other columns (an admin's change); the caller then runs
 * the statement, which casts or fails as it always did.
 */
static bool
read_run_direct(text *run_id, SbRun *run)
{
	TupleDesc desc;
	HeapTuple row;
	int status_att, current_att, highest_att;
	bool isnull;
	Datum status;

	row = sb_direct_fetch_next(SB_RUNS, run_id, &desc);
	if (desc == NULL)
		return false;
	run->has_record = row != NULL;
	if (row == NULL)
		return true;
	status_att = run_column(desc, "status", TEXTOID);
	current_att = run_column(desc, "driver_epoch", INT8OID);
	highest_att = run_column(desc, "max_driver_epoch", INT8OID);
	if (status_att == 0 || current_att == 0 || highest_att == 0)
		return false;
	status = heap_getattr(row, status_att, desc, &isnull);
	if (isnull)
		return false;
	run->status = TextDatumGetCString(status);
	run->current = DatumGetInt64(heap_getattr(row, current_att, desc, &isnull));
	run->claimed = !isnull;
	run->highest = DatumGetInt64(heap_getattr(row, highest_att, desc, &isnull));
	run->ever_claimed = !isnull;
	return true;
}

/* The runs row of run_id read with the statement read_run (or 1.5.1's). */
static void
read_run_statement(text *run_id, bool keeps_highest, SbRun *run)
{
	Datum arg = PointerGetDatum(run_id);

	run->has_record = sb_spi_execute(keeps_highest ? &read_run : &read_run_v1_5_1, &arg, NULL,
									 false, InvalidSnapshot) > 0;
	if (!run->has_record)
		return;
	run->claimed = run_int8(Anum_run_driver_epoch, &run->current);
	if (keeps_highest)
		run->ever_claimed = run_int8(Anum_run_max_driver_epoch, &run->highest);
	else
	{
		run->ever_claimed = run->claimed;
		run->highest = run->current;
	}
	run->status = TextDatumGetCString(sb_spi_value(SPI_tuptable, 0, Anum_run_status, "status"));
}

/*
 * The fence, read after the log row's lock: SB001 unless the write may go
 * on (without an epoch, while the run was never claimed: no runs row, or no
 * highest epoch; at 1.5.1 and 1.5.2 (keeps_highest false), no current one;
 * with one, when it is the run's current epoch).  Returns the run's status
 * (NULL without a runs row), in the caller's memory.
 *
 * The runs row is read directly when it may be (sandbox_store.direct_reads,
 * no Citus, no row-level security forced on runs, a database at 1.6.0 or
 * later): an SQL statement costs more than the rest of the fence
 * (BENCHMARKS.md, "Run logs").
 */
static char *
check_fence(text *run_id, bool given, int64 epoch, bool keeps_highest)
{
	const SbRelations *rels = sb_relations();
	SbRun run = {0};

	if (!(keeps_highest && sb_direct_reads() && OidIsValid(rels->runs) &&
		  !rels->runs_row_security && read_run_direct(run_id, &run)))
	{
		memset(&run, 0, sizeof(run));
		read_run_statement(run_id, keeps_highest, &run);
	}
	if (given ? (!run.claimed || run.current != epoch) : run.ever_claimed)
		report_stale_epoch(run_id, given, epoch, run.has_record, run.claimed, run.current,
						   run.ever_claimed ? run.highest : 0);
	return run.status;
}

/*
 * sandbox_store.run_log_append(run_id text, chunks jsonb, epoch bigint
 * DEFAULT NULL, notify boolean DEFAULT true) RETURNS bigint[]: the seqs of
 * the new entries, in order; keeps_highest: the rule of 1.6.0 (see the top
 * of this file).  Before 1.7.0 there is no notify argument (true).
 */
static Datum
run_log_append(FunctionCallInfo fcinfo, bool keeps_highest)
{
	text *run_id = PG_ARGISNULL(0) ? NULL : PG_GETARG_TEXT_PP(0);
	Jsonb *chunks = PG_ARGISNULL(1) ? NULL : PG_GETARG_JSONB_P(1);
	bool given = !PG_ARGISNULL(2);
	int64 epoch = given ? PG_GETARG_INT64(2) : 0;
	bool notify = true;
	int n;
	int64 last;
	bool closed, watched;
	char *status;
	Datum args[3];
	Datum *seqs;

	if (run_id == NULL || VARSIZE_ANY_EXHDR(run_id) < 1 ||
		VARSIZE_ANY_EXHDR(run_id) > SB_MAX_TEXT_BYTES)
		report_invalid_run_id(run_id);
	if (chunks == NULL)
		report_not_an_array(NULL);
	n = count_chunks(chunks);
	if (given && epoch < 1)
		report_invalid_epoch(epoch);
	if (PG_NARGS() > 3)
	{
		if (PG_ARGISNULL(3))
			report_missing_notify();
		notify = PG_GETARG_BOOL(3);
	}

	sb_spi_connect();
	if (n == 0)
	{
		(void) check_fence(run_id, given, epoch, keeps_highest);
		sb_spi_finish();
		PG_RETURN_ARRAYTYPE_P(construct_empty_array(INT8OID));
	}

	/* The log row, locked, its tail moved past the new entries. */
	args[0] = PointerGetDatum(run_id);
	args[1] = Int64GetDatum((int64) n);
	if (sb_spi_execute(&upsert_log, args, NULL, false, InvalidSnapshot) != 1)
		elog(ERROR, "the upsert of the log row of a run returned no row");
	last = DatumGetInt64(sb_spi_value(SPI_tuptable, 0, Anum_upsert_last_before, "last_before"));
	closed = DatumGetBool(sb_spi_value(SPI_tuptable, 0, Anum_upsert_closed, "closed"));
	watched = DatumGetBool(sb_spi_value(SPI_tuptable, 0, Anum_upsert_watched, "watched"));

	status = check_fence(run_id, given, epoch, keeps_highest);
	if (closed)
		report_log_closed(run_id);
	if (status != NULL && run_status_finished(status))
		report_run_finished(run_id, status);
	if (last > RUN_LOG_MAX_SEQ - n)
		report_log_full(run_id, last, n);

	if (!(sb_direct_inserts() && sb_direct_insert_entries(run_id, last, chunks)))
	{
		args[1] = Int64GetDatum(last);
		args[2] = PointerGetDatum(chunks);
		if (sb_spi_execute(&insert_entries, args, NULL, false, InvalidSnapshot) != (uint64) n)
			elog(ERROR, "the insert of a run's log entries wrote a number of rows other than %d",
				 n);
	}
	if (watched && notify)
		Async_Notify(RUN_LOG_CHANNEL, text_to_cstring(run_id));
	sb_spi_finish();

	seqs = palloc(sizeof(Datum) * n);
	for (int i = 0; i < n; i++)
		seqs[i] = Int64GetDatum(last + i + 1);
	PG_RETURN_ARRAYTYPE_P(
		construct_array(seqs, n, INT8OID, sizeof(int64), FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
}

PG_FUNCTION_INFO_V1(sandbox_run_log_append_v1_7_0);
PG_FUNCTION_INFO_V1(sandbox_run_log_append_v1_6_0);
PG_FUNCTION_INFO_V1(sandbox_run_log_append_v1_5_1);

/* run_log_append of 1.7.0 on (the notify argument). */
Datum
sandbox_run_log_append_v1_7_0(PG_FUNCTION_ARGS)
{
	return run_log_append(fcinfo, true);
}

/* run_log_append of 1.6.0, for a database not yet updated. */
Datum
sandbox_run_log_append_v1_6_0(PG_FUNCTION_ARGS)
{
	return run_log_append(fcinfo, true);
}

/* run_log_append of 1.5.1 and 1.5.2, for a database not yet updated. */
Datum
sandbox_run_log_append_v1_5_1(PG_FUNCTION_ARGS)
{
	return run_log_append(fcinfo, false);
}
