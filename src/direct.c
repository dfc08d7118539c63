/*-------------------------------------------------------------------------
 *
 * direct.c
 *	  Direct primary-key reads: the two hottest reads, a key's record
 *	  (sandbox_get) and whether a claim token is set on a key (the lock-mode
 *	  resume), done with one btree probe instead of an SQL statement.
 *
 * A statement through SPI costs an executor start and end around the index
 * probe (about 40,000 instructions, more than the probe itself); these reads
 * need neither.  They are exactly what the statements did: the same index,
 * the same snapshot, the same locks (ACCESS SHARE on the table and its
 * primary key).  Like the statements, they need no privilege of the caller:
 * EXECUTE on the function is the gate.
 *
 * The setting sandbox_store.direct_reads (on by default) can turn them off,
 * and they are off whenever the citus extension is installed in the
 * database: on Citus the rows live in shards that only an SQL statement
 * reaches, so the callers then run their statements through SPI (spi.c).
 *
 * It also owns how a read locks a managed table and decides whether its
 * statement's snapshot predates DDL on it (which relations those are is
 * catalog.c's).
 *
 *-------------------------------------------------------------------------
 */
#include "sandbox_store.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "commands/extension.h"
#include "catalog/namespace.h"
#include "catalog/dependency.h"
#include "catalog/indexing.h"
#include "catalog/pg_class.h"
#include "catalog/pg_extension.h"
#include "executor/tuptable.h"
#include "storage/lmgr.h"
#include "storage/sinval.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

/* sandbox_store.direct_reads */
static bool direct_reads = true;

void
sb_direct_init(void)
{
	DefineCustomBoolVariable(
		"sandbox_store.direct_reads",
		"Read a key's record and claim with a direct primary-key probe instead of an SQL statement.",
		"Off: every read is an SQL statement (run through SPI).  Always off while the citus "
		"extension is installed.",
		&direct_reads, true, PGC_SUSET, 0, NULL, NULL, NULL);
	MarkGUCPrefixReserved("sandbox_store");
}

/* Whether reads may be direct now. */
bool
sb_direct_reads(void)
{
	return direct_reads && !sb_relations()->citus;
}

/*
 * Lock the managed table which (SB_INSTANCES or SB_LEASES) ACCESS SHARE and
 * return its OID, as of after the lock.  The OID known before the lock may
 * be stale once it is granted: the wait for the lock is where invalidations
 * are taken in, so a table replaced while this call waited (an extension
 * update) is looked up again, as RangeVarGetRelidExtended does for names.
 * *changed tells whether invalidations arrived while the lock was taken.
 */
static Oid
lock_table(SbTable which, bool *changed)
{
	*changed = false;
	for (;;)
	{
		uint64 inval_count = SharedInvalidMessageCounter;
		const SbRelations *rels = sb_relations();
		Oid relid = which == SB_INSTANCES ? rels->instances : rels->leases;

		if (!OidIsValid(relid))
			sb_report_missing_table(which == SB_INSTANCES ? "instances" : "leases");
		LockRelationOid(relid, AccessShareLock);
		if (inval_count == SharedInvalidMessageCounter)
			return relid;
		*changed = true;
		rels = sb_relations();
		if (relid == (which == SB_INSTANCES ? rels->instances : rels->leases))
			return relid;
		UnlockRelationOid(relid, AccessShareLock);
	}
}

/*
 * Whether snapshot predates the transaction that last changed relid's
 * catalog row (transactionally: ALTER TABLE, a rewrite, an extension update;
 * VACUUM and ANALYZE update it in place and do not count).
 */
static bool
snapshot_predates_ddl(Oid relid, Snapshot snapshot)
{
	HeapTuple tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	TransactionId xmin;
	bool predates;

	if (!HeapTupleIsValid(tuple))
		return false;
	xmin = HeapTupleHeaderGetXmin(tuple->t_data);
	predates = TransactionIdIsNormal(xmin) && !TransactionIdIsCurrentTransactionId(xmin) &&
			   XidInMVCCSnapshot(xmin, snapshot);
	ReleaseSysCache(tuple);
	return predates;
}

/*
 * Lock the managed table which for a read in the statement's snapshot.
 * Returns true when that snapshot is too old: at READ COMMITTED, when DDL on
 * the table committed after the snapshot was taken.  A plain SELECT waits
 * for its tables' locks before it takes its snapshot; a function is called
 * after, so a table rewritten meanwhile (ALTER TABLE, an extension update)
 * would look empty to it: its rows are all new.  The caller then reads with
 * a new snapshot, as the SELECT would have.  Under REPEATABLE READ the
 * transaction's snapshot stays, as for any query.
 */
bool
sb_lock_table_for_read(SbTable which)
{
	bool changed;
	Oid relid = lock_table(which, &changed);

	return !IsolationUsesXactSnapshot() && snapshot_predates_ddl(relid, GetActiveSnapshot());
}

/*
 * The row of key in the managed table which, found through the table's
 * primary key (on one text column) with snapshot (NULL: the statement's, or
 * a new one if it predates DDL on the table, as in sb_lock_table_for_read):
 * a copy in the current
 * memory context, or NULL if there is none.  *desc is set to the table's
 * descriptor, valid for the rest of the transaction (the table stays locked
 * ACCESS SHARE, so its columns cannot change); read columns by name from it,
 * never by position: an admin may have added or dropped columns.
 *
 * The index is the one the table's relation cache names as its primary key
 * once the table is locked, never an OID remembered from before: REINDEX
 * CONCURRENTLY or an admin's DROP and ADD of the constraint replace it, and
 * an index dropped that way waits for the lock this call now holds.
 */
HeapTuple
sb_direct_fetch(SbTable which, const text *key, Snapshot snapshot, TupleDesc *desc)
{
	bool changed;
	Relation heap;
	Relation index;
	Oid pkey;
	ScanKeyData skey;
	IndexScanDesc scan;
	TupleTableSlot *slot;
	HeapTuple tuple = NULL;

	heap = table_open(lock_table(which, &changed), NoLock);
	/* DDL committed while the lock was awaited: was it DROP EXTENSION? */
	if (changed)
		sb_call_check();
	if (snapshot == NULL)
	{
		snapshot = GetActiveSnapshot();
		if (!IsolationUsesXactSnapshot() && snapshot_predates_ddl(RelationGetRelid(heap), snapshot))
			snapshot = GetLatestSnapshot();
	}
	if (sb_relations()->row_security)
		sb_report_row_security();
	pkey = sb_primary_key_index(heap);
	if (!OidIsValid(pkey))
		sb_report_missing_table(which == SB_INSTANCES ? "instances_pkey" : "leases_pkey");
	index = index_open(pkey, AccessShareLock);
	/* The index's own collation, so the btree compares as it was built. */
	ScanKeyEntryInitialize(&skey, 0, 1, BTEqualStrategyNumber, InvalidOid,
						   index->rd_indcollation[0], F_TEXTEQ, PointerGetDatum(key));
	slot = table_slot_create(heap, NULL);
	scan = sb_index_beginscan(heap, index, snapshot, 1, 0);
	index_rescan(scan, &skey, 1, NULL, 0);
	if (index_getnext_slot(scan, ForwardScanDirection, slot))
		tuple = ExecCopySlotHeapTuple(slot);
	index_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
	*desc = RelationGetDescr(heap);
	index_close(index, NoLock);
	table_close(heap, NoLock);
	return tuple;
}
