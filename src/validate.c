/*-------------------------------------------------------------------------
 *
 * validate.c
 *	  Argument validation for every SQL-callable function of sandbox_store,
 *	  and the one error raised from more than one file (40001).
 *
 * Each checker reads one argument, raises the SQLSTATE that the error
 * table of docs/reference.md names (22004 for a missing required value, 22023 for an empty or
 * otherwise bad value, 22001 for text over SB_MAX_TEXT_BYTES) with a message
 * naming the argument, and returns the value.  All checks run before a
 * function takes a lock or touches the table, so a rejected call changes
 * nothing.
 *
 *-------------------------------------------------------------------------
 */
#include "sandbox_store.h"

#include <math.h>

#include "access/detoast.h"
#include "fmgr.h"
#include "access/xact.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"

/* 22004: a required argument is NULL. */
static void
report_null(const char *argname)
{
	ereport(ERROR,
			(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("%s must not be null", argname)));
}

static void
check_text_length(Datum value, const char *argname)
{
	/* The raw size needs no detoasting, so a huge value costs nothing. */
	Size bytes = toast_raw_datum_size(value) - VARHDRSZ;

	if (bytes == 0)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("%s must not be empty", argname)));
	if (bytes > SB_MAX_TEXT_BYTES)
		ereport(ERROR,
				(errcode(ERRCODE_STRING_DATA_RIGHT_TRUNCATION), errmsg("%s is too long", argname),
				 errdetail("The value has %zu bytes; at most %d are allowed.", bytes,
						   SB_MAX_TEXT_BYTES)));
}

/* A text argument that must be present: 1 to SB_MAX_TEXT_BYTES bytes. */
text *
sb_required_text(FunctionCallInfo fcinfo, int argno, const char *argname)
{
	if (PG_ARGISNULL(argno))
		report_null(argname);
	check_text_length(PG_GETARG_DATUM(argno), argname);
	return PG_GETARG_TEXT_PP(argno);
}

/* A text argument that may be NULL; when present, as sb_required_text. */
text *
sb_optional_text(FunctionCallInfo fcinfo, int argno, const char *argname)
{
	if (PG_ARGISNULL(argno))
		return NULL;
	check_text_length(PG_GETARG_DATUM(argno), argname);
	return PG_GETARG_TEXT_PP(argno);
}

static void
report_interval(const char *argname, const char *what, const Interval *value)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("%s must %s", argname, what),
			 errdetail("The value given is %s.", DatumGetCString(DirectFunctionCall1(
													 interval_out, IntervalPGetDatum(value))))));
}

static void
report_mixed_interval(const char *argname, const Interval *value)
{
	ereport(
		ERROR,
		(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
		 errmsg("%s must not mix negative and positive parts", argname),
		 errdetail(
			 "The value given is %s.  Its months, days and time last differently on different dates, so its sign depends on the date.",
			 DatumGetCString(DirectFunctionCall1(interval_out, IntervalPGetDatum(value))))),
		errhint(
			"Write it with parts of one sign, such as '36 hours' instead of '2 days -12 hours'."));
}

/*
 * Check the sign of a duration.  An interval is compared as if a month were
 * 30 days and a day 24 hours, but added to a timestamp with the calendar's
 * months and days: '-1 year +360 days 00:00:01' compares above zero yet
 * moves a timestamp five days back.  So the sign is judged part by part:
 * months, days and time must each be >= 0, which makes now + value >= now
 * on every date; positive also needs one part > 0.
 */
static void
check_interval_sign(const Interval *value, const char *argname, bool positive)
{
	bool some_negative = value->month < 0 || value->day < 0 || value->time < 0;
	bool some_positive = value->month > 0 || value->day > 0 || value->time > 0;

	if (some_negative && some_positive)
		report_mixed_interval(argname, value);
	if (some_negative)
		report_interval(argname, positive ? "be positive" : "not be negative", value);
	if (positive && !some_positive)
		report_interval(argname, "be positive", value);
}

/* An interval argument that may be NULL; when present, not negative. */
Interval *
sb_optional_interval(FunctionCallInfo fcinfo, int argno, const char *argname)
{
	Interval *value;

	if (PG_ARGISNULL(argno))
		return NULL;
	value = PG_GETARG_INTERVAL_P(argno);
	check_interval_sign(value, argname, false);
	return value;
}

/* A timestamptz argument that must be present and finite. */
TimestampTz
sb_required_timestamp(FunctionCallInfo fcinfo, int argno, const char *argname)
{
	TimestampTz value;

	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("%s must not be null", argname),
				 errhint("Omit %s to use the current time.", argname)));
	value = PG_GETARG_TIMESTAMPTZ(argno);
	if (TIMESTAMP_NOT_FINITE(value))
		ereport(
			ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("%s must be a finite timestamp", argname),
			 errdetail("Records are swept by age, which an infinite timestamp does not have.")));
	return value;
}

/*
 * An interval argument that must be positive: a lease.  required: NULL is an
 * error (22004); otherwise NULL returns NULL.
 */
Interval *
sb_positive_interval(FunctionCallInfo fcinfo, int argno, const char *argname, bool required)
{
	Interval *value;

	if (PG_ARGISNULL(argno))
	{
		if (required)
			report_null(argname);
		return NULL;
	}
	value = PG_GETARG_INTERVAL_P(argno);
	check_interval_sign(value, argname, true);
	/* now + value must stay a timestamp (an upper bound of the span: 31-day months). */
	if (fabs((double) value->month) * 31 * USECS_PER_DAY +
			fabs((double) value->day) * USECS_PER_DAY + fabs((double) value->time) >=
		(double) END_TIMESTAMP - (double) GetCurrentTimestamp())
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("%s is too long", argname),
						errdetail("now() + %s would be past the latest timestamp PostgreSQL has.",
								  argname)));
	return value;
}

/* A uuid argument that must be present: an owner token. */
pg_uuid_t *
sb_required_uuid(FunctionCallInfo fcinfo, int argno, const char *argname)
{
	if (PG_ARGISNULL(argno))
		report_null(argname);
	return PG_GETARG_UUID_P(argno);
}

static void
check_fence(int64 fence)
{
	if (fence <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("fence must be positive"),
				 errdetail("The value given is " INT64_FORMAT "; fences start at 1.", fence)));
}

/*
 * The optional fence argument of a fenced write, present only in functions
 * declared by version 1.1 or later.  Returns false when absent or NULL.
 */
bool
sb_optional_fence(FunctionCallInfo fcinfo, int argno, int64 *fence)
{
	if (PG_NARGS() <= argno || PG_ARGISNULL(argno))
		return false;
	*fence = PG_GETARG_INT64(argno);
	check_fence(*fence);
	return true;
}

/* The fence argument of a write that must be fenced (sandbox_upsert_release). */
int64
sb_required_fence(FunctionCallInfo fcinfo, int argno)
{
	int64 fence;

	if (PG_ARGISNULL(argno))
		report_null("fence");
	fence = PG_GETARG_INT64(argno);
	check_fence(fence);
	return fence;
}

/*
 * now() - age, for "older than age" tests, without the "timestamp out of
 * range" error of SQL arithmetic: an age reaching past the oldest timestamp
 * PostgreSQL has gives -infinity (nothing is that old).  age is not
 * negative.  The arithmetic is done in UTC, whatever the session's
 * TimeZone: the same microseconds are taken as a timestamp without time
 * zone (which is UTC), so a day is 24 hours and a month a calendar month in
 * UTC.  timestamptz arithmetic would count days and months in the session's
 * zone, and two app servers in different zones would decide differently
 * across a daylight-saving change.
 */
TimestampTz
sb_cutoff(const Interval *age)
{
	TimestampTz start = GetCurrentTransactionStartTimestamp();
	/* An upper bound of the span: months of 31 days. */
	double span = fabs((double) age->month) * 31 * USECS_PER_DAY +
				  fabs((double) age->day) * USECS_PER_DAY + fabs((double) age->time);

	if (span >= (double) start - (double) MIN_TIMESTAMP)
	{
		TimestampTz none;

		TIMESTAMP_NOBEGIN(none);
		return none;
	}
	return DatumGetTimestamp(DirectFunctionCall2(timestamp_mi_interval, TimestampGetDatum(start),
												 IntervalPGetDatum(age)));
}

/* An interval argument that must be present; otherwise as sb_optional_interval. */
Interval *
sb_required_interval(FunctionCallInfo fcinfo, int argno, const char *argname)
{
	if (PG_ARGISNULL(argno))
		report_null(argname);
	return sb_optional_interval(fcinfo, argno, argname);
}

/* An integer argument that must be present and positive. */
int32
sb_positive_int32(FunctionCallInfo fcinfo, int argno, const char *argname)
{
	int32 value;

	if (PG_ARGISNULL(argno))
		report_null(argname);
	value = PG_GETARG_INT32(argno);
	if (value <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("%s must be positive", argname),
				 errdetail("The value given is %d.", value)));
	return value;
}

/*
 * 40001, raised by more than one file: this REPEATABLE READ or SERIALIZABLE
 * transaction's snapshot does not show the key's what ("record", "claim")
 * as it is now, and acting on it would act beside a newer version.
 */
void
sb_report_serialization(const text *key, const char *what)
{
	ereport(ERROR,
			(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
			 errmsg("could not serialize access to sandbox key \"%s\"", text_to_cstring(key)),
			 errdetail("The key's %s was changed by a transaction that committed after this "
					   "transaction's snapshot was taken.",
					   what),
			 errhint("Retry the transaction, or run it at READ COMMITTED.")));
}
