/*-------------------------------------------------------------------------
 *
 * sandbox_store.c
 *	  Module entry of the sandbox_store extension: the magic block and
 *	  _PG_init.  Each responsibility lives in a file of its own:
 *
 *	  validate.c	argument checks and their SQLSTATEs
 *	  spi.c			how statements run: prepared once, as the tables' owner
 *	  direct.c		direct primary-key reads of the hottest lookups
 *	  locks.c		the per-key advisory lock (sandbox_lock, _try_lock, _lock_id,
 *					_lock_holder)
 *	  claims.c		lease mode: claims and fences (sandbox_renew, _release)
 *	  store.c		the managed table (sandbox_upsert, _get, _delete, _list)
 *	  ensure.c		resume-or-create under the key's lock (sandbox_ensure)
 *	  reap.c		deleting idle records nobody holds (sandbox_reap)
 *	  result.c		the row types functions return, looked up once per backend
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
	sb_spi_init();
	sb_direct_init();
	sb_result_init();
}
