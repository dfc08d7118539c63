/*-------------------------------------------------------------------------
 *
 * sandbox_store.c
 *	  Module entry of the sandbox_store extension: the magic block,
 *	  _PG_init and the setting sandbox_store.max_checkpoint_bytes.  Each responsibility lives in a file of its own, and calls
 *	  go down this list only (no two files call each other):
 *
 *	  SQL entry points and decisions
 *	  ensure.c		resume-or-create under the key (sandbox_ensure; lock mode and
 *					lease mode each decide in a function of their own)
 *	  reap.c		deleting idle records nobody holds (sandbox_reap)
 *	  store.c		the record table (sandbox_upsert, _get, _delete, _list)
 *	  keys.c		taking a key and nothing else, in lock and lease mode
 *					(sandbox_lock, _try_lock, _claim, _renew, _release)
 *	  checkpoint_check.c	the check of a checkpoint before it is appended, and its
 *					blob keys (sandbox_store_internal._checkpoint_check)
 *	  run_log.c		a run's log append, fenced by the driver epoch
 *					(run_log_append; the C edition's, the rest of the runs is SQL)
 *	  taking a key
 *	  take.c		waits, claims in the way, 55P03, the lock's scope
 *	  tables and locks
 *	  claims.c		the leases table: claims, and the fence checks of fenced writes
 *	  fences.c		the fence sequence: a key's new fence, drawn and made durable
 *	  locks.c		the per-key advisory lock, primary only (sandbox_lock_id,
 *					_lock_holder)
 *	  result.c		the row types functions return, looked up once per backend
 *	  direct.c		direct primary-key reads of the hottest lookups, and the
 *					direct insert of a run log's entries
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
#include "utils/guc.h"

PG_MODULE_MAGIC;

void _PG_init(void);

/*
 * sandbox_store.max_checkpoint_bytes: the largest checkpoint the checkpoint
 * functions (SQL, src/sql/parts/shared/checkpoints/) work on.  Defined here so
 * that it has a type, a unit and who may set it (superusers); the checkpoint
 * functions read it through sandbox_store_internal._max_checkpoint_bytes(),
 * below (checkpoint_check.c reads the variable), never with current_setting: in a session that has not loaded the
 * library yet, the name is a placeholder any role may set, and calling the
 * function loads the library, which drops such a value.
 */
int sb_max_checkpoint_bytes = 0;

PG_FUNCTION_INFO_V1(sandbox_max_checkpoint_bytes_v1_4_1);

/* sandbox_store_internal._max_checkpoint_bytes() RETURNS bigint (0: no limit) */
Datum
sandbox_max_checkpoint_bytes_v1_4_1(PG_FUNCTION_ARGS)
{
	sb_check_library_version();
	PG_RETURN_INT64((int64) sb_max_checkpoint_bytes);
}

void
_PG_init(void)
{
	DefineCustomIntVariable(
		"sandbox_store.max_checkpoint_bytes",
		"The largest checkpoint sandbox_store's checkpoint functions accept, in bytes.",
		"A larger checkpoint is refused with SBC08 before it is processed: an append takes "
		"several times the checkpoint's size in backend memory.  0: no limit.",
		&sb_max_checkpoint_bytes, 0, 0, INT_MAX, PGC_SUSET, GUC_UNIT_BYTE, NULL, NULL, NULL);
	sb_catalog_init();
	sb_direct_init();
	sb_result_init();
}
