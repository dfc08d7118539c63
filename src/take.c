/*-------------------------------------------------------------------------
 *
 * take.c
 *	  Taking a key: how long a caller may wait, the key's lock taken within
 *	  that, the wait for a live claim (let go of the lock, sleep with
 *	  backoff, look again), "could not lock" (55P03), and how long a lock
 *	  taken now would last (none while the transaction ends; until the
 *	  statement ends in autocommit).  No SQL function of its own.
 *
 * Below it: locks.c (the advisory lock itself) and claims.c (the leases
 * table).  Above it: the SQL functions that take a key and nothing else
 * (keys.c), and the callers that take a key and then decide (ensure.c,
 * store.c).  A caller that must look at the key under its lock and wait
 * when a claim holds it runs the loop itself:
 *
 *	  for (int delay_ms = 1;; sb_back_off(key, wait, &blocker, &delay_ms))
 *	  {
 *		  sb_lock_key(key, wait);
 *		  if (<the key is free for this caller: leaves *blocker otherwise>)
 *			  break;
 *	  }
 *
 *-------------------------------------------------------------------------
 */
#include "sandbox_store.h"

#include <limits.h>

#include "access/xact.h"
#include "miscadmin.h"
#include "nodes/memnodes.h"
#include "pgstat.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "tcop/pquery.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/wait_event.h"

/* Longest sleep between two looks at a claim someone else holds. */
#define SB_MAX_POLL_MS 50

/* A wait longer than this (about 100 years) waits as long as the session allows. */
#define SB_MAX_WAIT_DAYS 36500

/*
 * How long a caller may wait: wait NULL is bounded only by the session
 * (lock_timeout, statement_timeout, cancel); otherwise until now + wait, or
 * now + lock_timeout if that is sooner.  A wait longer than SB_MAX_WAIT_DAYS
 * (months count 30 days) is as good as forever.
 */
SbWait
sb_wait_from(const Interval *wait)
{
	SbWait w;
	TimestampTz current = GetCurrentTimestamp();
	bool forever = true;

	w.wait = wait;
	w.deadline = current;
	w.by_lock_timeout = false;
	if (wait != NULL)
	{
		double usecs = (double) wait->time + (double) wait->day * USECS_PER_DAY +
					   (double) wait->month * DAYS_PER_MONTH * USECS_PER_DAY;

		if (usecs <= (double) SB_MAX_WAIT_DAYS * USECS_PER_DAY)
		{
			w.deadline = current + (int64) usecs;
			forever = false;
		}
	}
	if (LockTimeout > 0)
	{
		TimestampTz by_lock_timeout = TimestampTzPlusMilliseconds(current, LockTimeout);

		if (forever || by_lock_timeout < w.deadline)
		{
			w.deadline = by_lock_timeout;
			w.by_lock_timeout = true;
		}
		forever = false;
	}
	w.bounded = !forever;
	return w;
}

/* Milliseconds left before the deadline, rounded up; 0 when it has passed. */
static int
ms_left(const SbWait *wait)
{
	TimestampTz current = GetCurrentTimestamp();
	int64 usecs = wait->deadline - current;

	if (usecs <= 0)
		return 0;
	return usecs / 1000 >= INT_MAX ? INT_MAX : (int) ((usecs + 999) / 1000);
}

/* lock_timeout's value, as SHOW writes it, for the messages below. */
static char *
lock_timeout_text(void)
{
	return GetConfigOptionByName("lock_timeout", NULL, false);
}

/* The wait argument, as interval_out writes it, for the messages below. */
static char *
wait_text(const SbWait *wait)
{
	return DatumGetCString(DirectFunctionCall1(interval_out, IntervalPGetDatum(wait->wait)));
}

/* 55P03, when lock_timeout ended the wait (or the wait had no bound of its own). */
SB_NORETURN_BEFORE static void report_past_lock_timeout(const text *key,
														const SbClaim *claim) SB_NORETURN_AFTER;

static void
report_past_lock_timeout(const text *key, const SbClaim *claim)
{
	if (claim)
		ereport(ERROR, (errcode(ERRCODE_LOCK_NOT_AVAILABLE),
						errmsg("could not lock sandbox key \"%s\"", text_to_cstring(key)),
						errdetail("The key is claimed (fence " INT64_FORMAT
								  ") until %s, past lock_timeout (%s).",
								  claim->fence, timestamptz_to_str(claim->lease_expires_at),
								  lock_timeout_text()),
						errhint("Retry later, or raise lock_timeout.")));
	ereport(ERROR,
			(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
			 errmsg("could not lock sandbox key \"%s\"", text_to_cstring(key)),
			 errdetail("Another transaction holds the key's lock, and lock_timeout (%s) is over.",
					   lock_timeout_text()),
			 errhint("Retry later, or raise lock_timeout.")));
}

/* 55P03, when the wait argument ended the wait. */
SB_NORETURN_BEFORE static void report_past_wait(const text *key, const SbWait *wait,
												const SbClaim *claim) SB_NORETURN_AFTER;

static void
report_past_wait(const text *key, const SbWait *wait, const SbClaim *claim)
{
	if (claim)
		ereport(
			ERROR,
			(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
			 errmsg("could not lock sandbox key \"%s\"", text_to_cstring(key)),
			 errdetail("The key is claimed (fence " INT64_FORMAT ") until %s, past the wait (%s).",
					   claim->fence, timestamptz_to_str(claim->lease_expires_at), wait_text(wait)),
			 errhint("Retry later, or pass a longer wait.")));
	ereport(ERROR,
			(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
			 errmsg("could not lock sandbox key \"%s\"", text_to_cstring(key)),
			 errdetail("Another transaction holds the key's lock, and the wait (%s) is over.",
					   wait_text(wait)),
			 errhint("Retry later, or pass a longer wait.")));
}

/*
 * The key could not be taken within the wait: 55P03, saying which limit
 * (the wait argument or lock_timeout, whichever came first) ended it, and
 * whether a claim (claim) or another transaction's lock (claim NULL) was
 * in the way.
 */
SB_NORETURN_BEFORE static void report_not_obtained(const text *key, const SbWait *wait,
												   const SbClaim *claim) SB_NORETURN_AFTER;

static void
report_not_obtained(const text *key, const SbWait *wait, const SbClaim *claim)
{
	if (wait->by_lock_timeout || wait->wait == NULL)
		report_past_lock_timeout(key, claim);
	report_past_wait(key, wait, claim);
}

/*
 * Take the key's advisory lock for the rest of the transaction, waiting at
 * most as wait says.  A bounded wait sets lock_timeout for the wait only, in
 * a GUC nest level that is undone on success here and by transaction or
 * subtransaction abort on error, so it never leaks into later statements.
 * Raises 55P03 when not obtained.
 */
void
sb_lock_key(const text *key, const SbWait *wait)
{
	int wait_ms;
	int nest_level;
	char setting[32];
	MemoryContext cxt = CurrentMemoryContext;

	/* Unbounded, or bounded by lock_timeout alone: PostgreSQL's own wait. */
	if (!wait->bounded || wait->wait == NULL)
	{
		(void) sb_advisory_lock(key, false);
		return;
	}

	wait_ms = ms_left(wait);
	if (wait_ms == 0)
	{
		if (!sb_advisory_lock(key, true))
			report_not_obtained(key, wait, NULL);
		return;
	}

	snprintf(setting, sizeof(setting), "%d", wait_ms);
	nest_level = NewGUCNestLevel();
	(void) set_config_option("lock_timeout", setting, PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE,
							 true, 0, false);
	PG_TRY();
	{
		(void) sb_advisory_lock(key, false);
	}
	PG_CATCH();
	{
		ErrorData *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		if (edata->sqlerrcode != ERRCODE_LOCK_NOT_AVAILABLE)
			PG_RE_THROW();
		/* Our timeout fired: say so in the extension's words. */
		FlushErrorState();
		report_not_obtained(key, wait, NULL);
	}
	PG_END_TRY();
	AtEOXact_GUC(true, nest_level);
}

/*
 * Sleep on the latch before looking at a claim again: *delay_ms, doubled for
 * the next time up to SB_MAX_POLL_MS, cut short by the wait's deadline and
 * by wake_by (when the claim expires).  Interruptible: cancel,
 * statement_timeout and postmaster death end it.
 */
static void
sb_sleep_until(const SbWait *wait, int *delay_ms, TimestampTz wake_by)
{
	long timeout = *delay_ms;
	TimestampTz current = GetCurrentTimestamp();

	if (wake_by > current && (wake_by - current) / 1000 + 1 < timeout)
		timeout = (wake_by - current) / 1000 + 1;
	if (wait->bounded && ms_left(wait) < timeout)
		timeout = ms_left(wait);
	if (timeout > 0)
	{
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, timeout,
						 PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
	CHECK_FOR_INTERRUPTS();
	*delay_ms = Min(*delay_ms * 2, SB_MAX_POLL_MS);
}

/*
 * The portals that exist, found through their memory (portalmem.c keeps the
 * table of portals to itself): every portal's context is a child of the
 * portal manager's root context, so a sibling of the active portal's, and
 * carries the portal's name as its identifier, except that the unnamed
 * portal's says "<unnamed>" in current releases (older ones have its name,
 * "", which needs nothing more).  The other children of the root are hold
 * stores' contexts, which have no identifier.  NULL when no portal is active
 * (so none is running a query).
 */
static MemoryContext
portal_root(void)
{
	if (ActivePortal == NULL || ActivePortal->portalContext == NULL)
		return NULL;
	return ActivePortal->portalContext->parent;
}

/* The portal whose context this is, or NULL. */
static Portal
portal_of_context(MemoryContext cxt)
{
	const char *name = cxt->ident;
	Portal portal;

	if (name == NULL)
		return NULL;
	if (strcmp(name, "<unnamed>") == 0)
		name = ""; /* most likely; a cursor named "<unnamed>" is looked up next */
	portal = GetPortalByName(name);
	if (portal != NULL && portal->portalContext == cxt)
		return portal;
	if (name == cxt->ident)
		return NULL;
	portal = GetPortalByName(cxt->ident);
	return portal != NULL && portal->portalContext == cxt ? portal : NULL;
}

/* Whether any portal of this backend passes the test. */
static bool
any_portal(MemoryContext root, bool (*test)(Portal portal))
{
	for (MemoryContext cxt = root->firstchild; cxt != NULL; cxt = cxt->nextchild)
	{
		Portal portal = portal_of_context(cxt);

		if (portal != NULL && test(portal))
			return true;
	}
	return false;
}

/*
 * Whether any portal has a hold store: a context among the portals' without
 * an identifier.  A few instructions, where looking the portals up costs a
 * hash lookup each: on the hot path, portals are looked up only if so.
 */
static bool
any_hold_store(MemoryContext root)
{
	for (MemoryContext cxt = root->firstchild; cxt != NULL; cxt = cxt->nextchild)
		if (cxt->ident == NULL)
			return true;
	return false;
}

/*
 * A portal whose query PostgreSQL is running to its end into a hold store to
 * keep its rows past the end of the transaction (PersistHoldablePortal): a
 * WITH HOLD cursor at COMMIT, or a procedure's cursor loop at COMMIT or
 * ROLLBACK.  Only then does a query-running (PORTAL_ONE_SELECT) portal of
 * the transaction have a hold store while active; afterwards the portal
 * belongs to no transaction (createSubid invalid).
 */
static bool
portal_being_kept(Portal portal)
{
	return portal->status == PORTAL_ACTIVE && portal->strategy == PORTAL_ONE_SELECT &&
		   portal->holdStore != NULL && portal->createSubid != InvalidSubTransactionId;
}

/*
 * A lock-mode call must not answer from where its lock would already be
 * gone.  PostgreSQL runs the rest of a WITH HOLD cursor's query while the
 * transaction commits, and the rest of a procedure's cursor loop at a COMMIT
 * or ROLLBACK in the loop; the transaction-scoped lock ends right after,
 * before anyone reads the result.  Any call run by such a query, however deep
 * (a PL/pgSQL FOR loop or any SPI cursor in it runs a portal of its own, which
 * hides the one being kept), is refused.  Looked up on each call, never
 * remembered, so it holds for the first call of a backend as well (the
 * library may be loaded by that very call, inside the query being kept).
 * Rows of a WITH HOLD cursor fetched inside the transaction are computed
 * there, under the lock, as in any query.
 */
void
sb_check_lock_scope(const char *fname)
{
	MemoryContext root = portal_root();

	if (root != NULL && any_hold_store(root) && any_portal(root, portal_being_kept))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s cannot run while its transaction ends", fname),
				 errdetail("PostgreSQL runs the rest of the query of a WITH HOLD cursor, or of a "
						   "procedure's cursor loop, as the transaction ends, and the key's lock "
						   "ends with the transaction, before the result is read."),
				 errhint("Call it in a plain statement inside the transaction, fetch the cursor's "
						 "rows before COMMIT, or pass a lease.")));
}

/*
 * The top-level CALL or DO statement running a procedure or DO block
 * non-atomically (the only way either runs in a portal of its own outside a
 * transaction block).
 */
static bool
portal_running_procedure(Portal portal)
{
	return portal->status == PORTAL_ACTIVE &&
		   (portal->commandTag == CMDTAG_CALL || portal->commandTag == CMDTAG_DO);
}

/*
 * Whether a lock taken now ends when the statement the client sent ends,
 * before the code that called for it can act on the answer: outside a
 * transaction block, unless a procedure or DO block is running (directly, or
 * through a function it calls), which holds the lock until its own COMMIT or
 * ROLLBACK, or its end.
 */
bool
sb_lock_ends_with_statement(void)
{
	MemoryContext root;

	if (IsTransactionBlock() || SPI_inside_nonatomic_context())
		return false;
	root = portal_root();
	return root == NULL || !any_portal(root, portal_running_procedure);
}

/*
 * A live claim (*blocker) holds the key: let go of the key's lock, raise
 * 55P03 if the wait is over, else sleep until the claim may have ended
 * (backing off in *delay_ms).  The caller then takes the lock and looks
 * again.  Every caller that waits for claims waits here.
 */
void
sb_back_off(const text *key, const SbWait *wait, const SbClaim *blocker, int *delay_ms)
{
	sb_unlock_key(key);
	if (wait->bounded && GetCurrentTimestamp() >= wait->deadline)
		report_not_obtained(key, wait, blocker);
	sb_sleep_until(wait, delay_ms, blocker->lease_expires_at);
}

/* Take the key's lock, once no live claim holds the key.  Connected to SPI. */
void
sb_acquire_key(const text *key, const SbWait *wait)
{
	SbClaim blocker;

	for (int delay_ms = 1;; sb_back_off(key, wait, &blocker, &delay_ms))
	{
		sb_lock_key(key, wait);
		if (!sb_claims_enabled() || sb_key_free(key, &blocker))
			return;
	}
}
