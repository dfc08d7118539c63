/*-------------------------------------------------------------------------
 *
 * validate.c
 *	  Argument validation for every SQL-callable function of sandbox_store.
 *
 * Each checker reads one argument, raises the SQLSTATE that the error
 * table of docs/reference.md names (22004 for a missing required value,
 * 22023 for an empty or otherwise bad value, 22001 for text over
 * SB_MAX_TEXT_BYTES) with a message naming the argument, and returns the
 * value.  All checks run before a function takes a lock or touches the
 * table, so a rejected call changes nothing.  The time arithmetic the
 * callers do with the values is clock.c's.
 *
 *-------------------------------------------------------------------------
 */
#include "sandbox_store.h"

#include "access/detoast.h"
#include "fmgr.h"
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

/*
 * A key argument: as sb_required_text, and not reserved.  Keys that start
 * with SB_RESERVED_KEY_BYTE (0x01) are the extension's own claims (a
 * thread's checkpoint writer holds E'\x01checkpoint-writer\x01' || thread):
 * no function that takes a key reads, takes or writes one.
 */
text *
sb_required_key(FunctionCallInfo fcinfo, int argno)
{
	text *key = sb_required_text(fcinfo, argno, "key");

	if (*VARDATA_ANY(key) == SB_RESERVED_KEY_BYTE)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("key is reserved"),
				 errdetail("Keys that start with E'\\x01' are reserved for the extension's own "
						   "claims, such as the checkpoint writers'."),
				 errhint("Use a key that does not start with the byte 0x01.")));
	return key;
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

/* The value given, as interval_out writes it, for the details below. */
static char *
interval_text(const Interval *value)
{
	return DatumGetCString(DirectFunctionCall1(interval_out, IntervalPGetDatum(value)));
}

static void
report_not_positive(const char *argname, const Interval *value)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("%s must be positive", argname),
			 errdetail("The value given is %s.", interval_text(value))));
}

static void
report_negative(const char *argname, const Interval *value)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("%s must not be negative", argname),
			 errdetail("The value given is %s.", interval_text(value))));
}

static void
report_mixed_interval(const char *argname, const Interval *value)
{
	ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					errmsg("%s must not mix negative and positive parts", argname),
					errdetail("The value given is %s.  Its months, days and time last differently "
							  "on different dates, so its sign depends on the date.",
							  interval_text(value)),
					errhint("Write it with parts of one sign, such as '36 hours' instead of "
							"'2 days -12 hours'.")));
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
	if (some_negative && positive)
		report_not_positive(argname, value);
	if (some_negative)
		report_negative(argname, value);
	if (positive && !some_positive)
		report_not_positive(argname, value);
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
	/* now + value must stay a timestamp. */
	if (sb_interval_reach(value) >= (double) END_TIMESTAMP - (double) GetCurrentTimestamp())
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
