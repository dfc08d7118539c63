/*-------------------------------------------------------------------------
 *
 * direct.c
 *	  Direct primary-key reads: the three hottest reads, a key's record
 *	  (sandbox_get), whether a claim token is set on a key (the lock-mode
 *	  resume) and a run's epochs (the fence of run_log_append), done with one
 *	  btree probe instead of an SQL statement; and the hottest write, the
 *	  entries of run_log_append, inserted without one.
 *
 * A statement through SPI costs an executor start and end around the index
 * probe (about 40,000 instructions, more than the probe itself); these reads
 * need neither.  They are exactly what the statements did: the same index,
 * the same snapshot, the same locks (ACCESS SHARE on the table and its
 * primary key).  Like the statements, they need no privilege of the caller:
 * EXECUTE on the function is the gate.
 *
 * The settings sandbox_store.direct_reads and sandbox_store.direct_inserts
 * (on by default) can turn them off, and they are off whenever the citus
 * extension is installed in the database: on Citus the rows live in shards
 * that only an SQL statement reaches, so the callers then run their
 * statements through SPI (spi.c).
 *
 * It also owns how a read locks a managed table and decides whether its
 * statement's snapshot predates DDL on it (which relations those are is
 * catalog.c's).
 *
 *-------------------------------------------------------------------------
 */
#include "sandbox_store.h"

#include "access/genam.h"
#include "catalog/pg_am.h"
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
#include "catalog/pg_opfamily.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "executor/tuptable.h"
#include "nodes/makefuncs.h"
#include "storage/lmgr.h"
#include "storage/sinval.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

/* sandbox_store.direct_reads, sandbox_store.direct_inserts */
static bool direct_reads = true;
static bool direct_inserts = true;

void
sb_direct_init(void)
{
	DefineCustomBoolVariable(
		"sandbox_store.direct_reads",
		"Read a key's record and claim with a direct primary-key probe instead of an SQL statement.",
		"Off: every read is an SQL statement (run through SPI).  Always off while the citus "
		"extension is installed.",
		&direct_reads, true, PGC_SUSET, 0, NULL, NULL, NULL);
	DefineCustomBoolVariable(
		"sandbox_store.direct_inserts",
		"Insert the entries of a run log's append directly instead of with an SQL statement.",
		"Off: the entries are inserted by an INSERT statement (run through SPI).  Always off "
		"while the citus extension is installed.",
		&direct_inserts, true, PGC_SUSET, 0, NULL, NULL, NULL);
	MarkGUCPrefixReserved("sandbox_store");
}

/* Whether reads may be direct now. */
bool
sb_direct_reads(void)
{
	return direct_reads && !sb_relations()->citus;
}

/* The OID of the managed table which, as rels knows it. */
static Oid
table_oid(const SbRelations *rels, SbTable which)
{
	switch (which)
	{
		case SB_INSTANCES:
			return rels->instances;
		case SB_LEASES:
			return rels->leases;
		case SB_RUNS:
			return rels->runs;
		case SB_RUN_LOG_ENTRIES:
			return rels->run_log_entries;
	}
	elog(ERROR, "unknown managed table %d", (int) which);
	return InvalidOid; /* keep the compiler quiet */
}

/* The name of the managed table which. */
static const char *
table_name(SbTable which)
{
	switch (which)
	{
		case SB_INSTANCES:
			return "instances";
		case SB_LEASES:
			return "leases";
		case SB_RUNS:
			return "runs";
		case SB_RUN_LOG_ENTRIES:
			return "run_log_entries";
	}
	return "?"; /* keep the compiler quiet */
}

/* Whether the run log's entries may be inserted directly now. */
bool
sb_direct_inserts(void)
{
	return direct_inserts && !sb_relations()->citus;
}

/*
 * Lock the managed table which in mode and
 * return its OID, as of after the lock.  The OID known before the lock may
 * be stale once it is granted: the wait for the lock is where invalidations
 * are taken in, so a table replaced while this call waited (an extension
 * update) is looked up again, as RangeVarGetRelidExtended does for names.
 * *changed tells whether invalidations arrived while the lock was taken.
 */
static Oid
lock_table(SbTable which, LOCKMODE mode, bool *changed)
{
	*changed = false;
	for (;;)
	{
		uint64 inval_count = SharedInvalidMessageCounter;
		const SbRelations *rels = sb_relations();
		Oid relid = table_oid(rels, which);

		if (!OidIsValid(relid))
			sb_report_missing_table(table_name(which));
		LockRelationOid(relid, mode);
		if (inval_count == SharedInvalidMessageCounter)
			return relid;
		*changed = true;
		rels = sb_relations();
		if (relid == table_oid(rels, which))
			return relid;
		UnlockRelationOid(relid, mode);
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
	Oid relid = lock_table(which, AccessShareLock, &changed);

	return !IsolationUsesXactSnapshot() && snapshot_predates_ddl(relid, GetActiveSnapshot());
}

/* The column that is the primary key of the managed table which. */
static const char *
key_column(SbTable which)
{
	return which == SB_RUNS ? "run_id" : "key";
}

/*
 * The primary key of heap, open, if it is the probe this file makes: a
 * btree on the one text column key_column(which), compared as text with the
 * column's own collation, as the statements' WHERE clauses compare.
 * Otherwise (an admin's DROP and ADD of the constraint on other columns or
 * types, which the statements do not rely on) NULL: the caller runs its
 * statement.  No primary key at all is a damaged installation (42P01).
 */
static Relation
open_key_index(SbTable which, Relation heap)
{
	Oid pkey = sb_primary_key_index(heap);
	Relation index;
	int attnum;
	Form_pg_attribute att;

	if (!OidIsValid(pkey))
		sb_report_missing_table(psprintf("%s_pkey", table_name(which)));
	attnum = SPI_fnumber(RelationGetDescr(heap), key_column(which));
	if (attnum <= 0)
		return NULL;
	att = TupleDescAttr(RelationGetDescr(heap), attnum - 1);
	index = index_open(pkey, AccessShareLock);
	if (index->rd_rel->relam != BTREE_AM_OID || index->rd_index->indnkeyatts != 1 ||
		index->rd_index->indkey.values[0] != attnum || att->atttypid != TEXTOID ||
		index->rd_opfamily[0] != TEXT_BTREE_FAM_OID ||
		index->rd_indcollation[0] != att->attcollation)
	{
		index_close(index, AccessShareLock);
		return NULL;
	}
	return index;
}

/*
 * The row of key in heap (the managed table which, locked), found through
 * its primary key with snapshot: a copy in the current memory context, or
 * NULL if there is none.  *desc is set to the table's descriptor, or to NULL
 * when the primary key is not one this file can probe (open_key_index).
 */
static HeapTuple
fetch(SbTable which, Relation heap, const text *key, Snapshot snapshot, TupleDesc *desc)
{
	Relation index;
	ScanKeyData skey;
	IndexScanDesc scan;
	TupleTableSlot *slot;
	HeapTuple tuple = NULL;

	*desc = NULL;
	index = open_key_index(which, heap);
	if (index == NULL)
		return NULL;
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
	return tuple;
}

/* The managed table which, locked in mode (after a wait, checked as a call's). */
static Relation
open_locked(SbTable which, LOCKMODE mode)
{
	bool changed;
	Relation rel = table_open(lock_table(which, mode, &changed), NoLock);

	/* DDL committed while the lock was awaited: was it DROP EXTENSION? */
	if (changed)
		sb_call_check();
	return rel;
}

/*
 * The row of key in the managed table which (instances or leases), found
 * through the table's primary key (on one text column) with snapshot (NULL:
 * the statement's, or a new one if it predates DDL on the table, as in
 * sb_lock_table_for_read): a copy in the current memory context, or NULL
 * if there is none.  *desc is set to the table's descriptor, valid for the
 * rest of the transaction (the table stays locked ACCESS SHARE, so its
 * columns cannot change); read columns by name from it, never by position:
 * an admin may have added or dropped columns.  *desc NULL: the primary key
 * is not one this file probes; the caller runs its statement.
 *
 * The index is the one the table's relation cache names as its primary key
 * once the table is locked, never an OID remembered from before: REINDEX
 * CONCURRENTLY or an admin's DROP and ADD of the constraint replace it, and
 * an index dropped that way waits for the lock this call now holds.
 */
HeapTuple
sb_direct_fetch(SbTable which, const text *key, Snapshot snapshot, TupleDesc *desc)
{
	Relation heap = open_locked(which, AccessShareLock);
	HeapTuple tuple;

	if (snapshot == NULL)
	{
		snapshot = GetActiveSnapshot();
		if (!IsolationUsesXactSnapshot() && snapshot_predates_ddl(RelationGetRelid(heap), snapshot))
			snapshot = GetLatestSnapshot();
	}
	if (sb_relations()->row_security)
		sb_report_row_security();
	tuple = fetch(which, heap, key, snapshot, desc);
	table_close(heap, NoLock);
	return tuple;
}

/*
 * The row of key in the managed table which as the transaction's next
 * statement would read it: the snapshot taken once the table is locked (a
 * new one at READ COMMITTED, so a rewrite of the table committed while the
 * lock was awaited is seen as a statement would see it; the transaction's
 * at REPEATABLE READ), seeing the transaction's commands so far.  Otherwise
 * as sb_direct_fetch.  Row-level security forced on runs is the caller's to
 * check (SbRelations.runs_row_security): it reads with a statement instead,
 * which PostgreSQL refuses as it always did.
 */
HeapTuple
sb_direct_fetch_next(SbTable which, const text *key, TupleDesc *desc)
{
	Relation heap = open_locked(which, AccessShareLock);
	HeapTuple tuple;

	PushActiveSnapshot(GetTransactionSnapshot());
	UpdateActiveSnapshotCommandId();
	tuple = fetch(which, heap, key, GetActiveSnapshot(), desc);
	PopActiveSnapshot();
	table_close(heap, NoLock);
	return tuple;
}

/*
 * Whether rel is run_log_entries as the extension made it, so that what an
 * INSERT of its three columns does besides writing the row and its index
 * entries is nothing: no trigger (a deferrable constraint's included; the
 * relation cache's, as pg_class keeps relhastriggers set until a VACUUM
 * after the last is dropped), no rule, no CHECK constraint, no identity or
 * generated column, no extra or dropped one (whose default the statement
 * would fill), not a partition (whose bound the statement would check),
 * row-level security not forced.  The columns by name and type: run_id
 * text, seq bigint, chunk jsonb.
 */
static bool
entries_as_made(Relation rel)
{
	static const struct
	{
		const char *name;
		Oid type;
	} columns[] = {{"run_id", TEXTOID}, {"seq", INT8OID}, {"chunk", JSONBOID}};
	TupleDesc desc = RelationGetDescr(rel);

	if (rel->rd_rel->relkind != RELKIND_RELATION || rel->rd_rel->relispartition ||
		rel->trigdesc != NULL || rel->rd_rules != NULL || desc->natts != lengthof(columns))
		return false;
	if (rel->rd_rel->relrowsecurity && rel->rd_rel->relforcerowsecurity)
		return false;
	if (desc->constr != NULL && (desc->constr->num_check > 0 || desc->constr->has_generated_stored))
		return false;
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (att->attisdropped || att->atttypid != columns[i].type || att->attidentity != '\0' ||
			att->attgenerated != '\0' || strcmp(NameStr(att->attname), columns[i].name) != 0)
			return false;
	}
	return true;
}

/*
 * The elements of chunks (a JSON array, checked by the caller) inserted
 * into run_log_entries under run_id at seqs after + 1, after + 2, ..., in
 * the array's order, without a statement: each row written and its index
 * entries made as INSERT writes them (a duplicate key is PostgreSQL's
 * 23505), as the tables' owner in a restricted security context (as the
 * statements run: an admin's index expression is evaluated so), in the
 * current command.  An INSERT statement through SPI spends more on its
 * executor's start, its function scan of the array and its end than on the
 * 16 rows of a typical batch (BENCHMARKS.md, "Run logs").
 *
 * Returns false, having written nothing, when the table is not as the
 * extension made it (entries_as_made): the caller then runs its statement,
 * which does whatever the table asks for.
 */
bool
sb_direct_insert_entries(const text *run_id, int64 after, Jsonb *chunks)
{
	const SbRelations *rels = sb_relations();
	Relation rel;
	EState *estate;
	ResultRelInfo *rri;
	TupleTableSlot *slot;
	CommandId cid;
	JsonbIterator *it;
	JsonbValue v;
	JsonbIteratorToken token;
	int64 seq = after;
	Oid save_userid;
	int save_sec_context;

	if (!OidIsValid(rels->run_log_entries))
		return false;
	rel = open_locked(SB_RUN_LOG_ENTRIES, RowExclusiveLock);
	if (!entries_as_made(rel))
	{
		table_close(rel, NoLock);
		return false;
	}

	sb_as_owner_begin(&save_userid, &save_sec_context);
	estate = CreateExecutorState();
	rri = makeNode(ResultRelInfo);
	InitResultRelInfo(rri, rel, 1, NULL, 0);
	ExecOpenIndices(rri, false);
	slot = table_slot_create(rel, NULL);
	cid = GetCurrentCommandId(true);
	it = JsonbIteratorInit(&chunks->root);
	while ((token = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		CHECK_FOR_INTERRUPTS();
		if (token != WJB_ELEM)
			continue;
		ExecClearTuple(slot);
		slot->tts_values[0] = PointerGetDatum(run_id);
		slot->tts_values[1] = Int64GetDatum(++seq);
		slot->tts_values[2] = JsonbPGetDatum(JsonbValueToJsonb(&v));
		memset(slot->tts_isnull, false, 3 * sizeof(bool));
		ExecStoreVirtualTuple(slot);
		table_tuple_insert(rel, slot, cid, 0, NULL);
		if (rri->ri_NumIndices > 0)
			(void) sb_insert_index_tuples(rri, slot, estate);
		ResetPerTupleExprContext(estate);
	}
	ExecDropSingleTupleTableSlot(slot);
	ExecCloseIndices(rri);
	FreeExecutorState(estate);
	sb_as_owner_end(save_userid, save_sec_context);
	table_close(rel, NoLock);
	return true;
}
