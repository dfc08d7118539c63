/*-------------------------------------------------------------------------
 *
 * sandbox_store.c
 *	  Module entry of the sandbox_store extension: the magic block and
 *	  _PG_init.  Each responsibility lives in a file of its own:
 *
 *	  validate.c	argument checks and their SQLSTATEs
 *	  locks.c		the per-key advisory lock (sandbox_lock, sandbox_try_lock)
 *	  store.c		the managed table (sandbox_upsert, _get, _delete, _list)
 *	  ensure.c		resume-or-create under the key's lock (sandbox_ensure)
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
	sb_store_init();
}
