/*-------------------------------------------------------------------------
 *
 * clock.c
 *	  Time arithmetic on the server's clock, in UTC: a record's cutoff
 *	  (now - age), a claim's expiry (from + lease), and how far an interval
 *	  can reach at most.
 *
 * The arithmetic is done in UTC, whatever the session's TimeZone: the same
 * microseconds are taken as a timestamp without time zone (which is UTC),
 * so a day is 24 hours and a month a calendar month in UTC.  timestamptz
 * arithmetic would count days and months in the session's zone, and two
 * app servers in different zones would decide differently across a
 * daylight-saving change.
 *
 * The bottom of the house with catalog.c: it calls no other file of the
 * extension.  Its callers are at every level (validate.c's check that a
 * lease fits, store.c's and reap.c's age tests, claims.c's expiry), so it
 * lives below all of them.
 *
 *-------------------------------------------------------------------------
 */
#include "sandbox_store.h"

#include <math.h>

#include "access/xact.h"
#include "fmgr.h"
#include "utils/fmgrprotos.h"

/*
 * An upper bound of how far the interval moves a timestamp, in
 * microseconds, whatever its sign: months are counted as 31 days.
 */
double
sb_interval_reach(const Interval *value)
{
	return fabs((double) value->month) * 31 * USECS_PER_DAY +
		   fabs((double) value->day) * USECS_PER_DAY + fabs((double) value->time);
}

/*
 * The transaction's start - age, in UTC, for "older than age" tests,
 * without the "timestamp out of range" error of SQL arithmetic: an age
 * reaching past the oldest timestamp PostgreSQL has gives -infinity
 * (nothing is that old).  age is not negative.
 */
TimestampTz
sb_cutoff(const Interval *age)
{
	TimestampTz start = GetCurrentTransactionStartTimestamp();

	if (sb_interval_reach(age) >= (double) start - (double) MIN_TIMESTAMP)
	{
		TimestampTz none;

		TIMESTAMP_NOBEGIN(none);
		return none;
	}
	return DatumGetTimestamp(DirectFunctionCall2(timestamp_mi_interval, TimestampGetDatum(start),
												 IntervalPGetDatum(age)));
}

/*
 * from + lease, in UTC: days and months are added as calendar days and
 * months of UTC, the same on every app server, never those of the
 * session's TimeZone (where a day across a daylight-saving change is 23 or
 * 25 hours).  The lease was checked to fit (sb_positive_interval).
 */
TimestampTz
sb_lease_expiry(TimestampTz from, const Interval *lease)
{
	return DatumGetTimestamp(DirectFunctionCall2(timestamp_pl_interval, TimestampGetDatum(from),
												 IntervalPGetDatum(lease)));
}
