/*-------------------------------------------------------------------------
 *
 * sandbox_store.c
 *	  Module entry of the sandbox_store extension: the magic block and
 *	  _PG_init.  Each responsibility lives in a file of its own, and calls
 *	  go down this list only (no two files call each other):
 *
 *	  SQL entry points and decisions
 *	  ensure.c		resume-or-create under the key (sandbox_ensure; lock mode and
 *					lease mode each decide in a function of their own)
 *	  reap.c		deleting idle records nobody holds (sandbox_reap)
 *	  store.c		the record table (sandbox_upsert, _get, _delete, _list)
 *	  keys.c		taking a key and nothing else, in lock and lease mode
 *					(sandbox_lock, _try_lock, _claim, _renew, _release)
 *	  taking a key
 *	  take.c		waits, claims in the way, 55P03, the lock's scope
 *	  tables and locks
 *	  claims.c		the leases table and fences
 *	  locks.c		the per-key advisory lock, primary only (sandbox_lock_id,
 *					_lock_holder)
 *	  result.c		the row types functions return, looked up once per backend
 *	  direct.c		direct primary-key reads of the hottest lookups
 *	  spi.c			how statements run: prepared once, as the tables' owner
 *	  catalog, checks and clock
 *	  catalog.c		which relations, their owner, citus: one cache
 *	  validate.c	argument checks and their SQLSTATEs (used by every level)
 *	  clock.c		time arithmetic in UTC: cutoffs, lease expiry (used by every
 *					level)
 *
 *-------------------------------------------------------------------------
 */
#include "sandbox_store.h"

#include "fmgr.h"

PG_MODULE_MAGIC;

void _PG_init(void);

void
_PG_init(void)
{
	sb_catalog_init();
	sb_direct_init();
	sb_result_init();
}
