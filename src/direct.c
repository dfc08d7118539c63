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
 * It also owns what every path needs to know about the managed tables,
 * cached per backend: which relations they are (found through the
 * extension, so a renamed schema or a look-alike table cannot redirect
 * them), whether row-level security is on (refused), and how a read locks a
 * table and decides whether its statement's snapshot predates DDL on it.
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

/*
 * The extension's relations, whether row-level security is on for a managed
 * table, and whether citus is installed: looked up again after any relation
 * or schema is created, dropped or renamed (which CREATE EXTENSION citus and
 * ALTER EXTENSION sandbox_store UPDATE both do).
 */
static bool relations_known = false;
static uint64 relations_invalidations = 0;
static SbRelations relations;

static void
relations_changed(Datum arg, int cacheid, uint32 hashvalue)
{
	relations_known = false;
	relations_invalidations++;
}

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
	CacheRegisterSyscacheCallback(RELNAMENSP, relations_changed, (Datum) 0);
	CacheRegisterSyscacheCallback(NAMESPACEOID, relations_changed, (Datum) 0);
}

/* Whether row-level security is enabled (or forced) on relid. */
static bool
row_security_on(Oid relid)
{
	HeapTuple tuple;
	bool on;

	if (!OidIsValid(relid))
		return false;
	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	if (!HeapTupleIsValid(tuple))
		return false;
	on = ((Form_pg_class) GETSTRUCT(tuple))->relrowsecurity ||
		 ((Form_pg_class) GETSTRUCT(tuple))->relforcerowsecurity;
	ReleaseSysCache(tuple);
	return on;
}

/* The schema extension ext was created in (pg_extension.extnamespace). */
static Oid
extension_schema(Oid ext)
{
	Relation rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple tuple;
	Oid nsp = InvalidOid;

	ScanKeyInit(&key, Anum_pg_extension_oid, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(ext));
	scan = systable_beginscan(rel, ExtensionOidIndexId, true, NULL, 1, &key);
	tuple = systable_getnext(scan);
	if (HeapTupleIsValid(tuple))
		nsp = ((Form_pg_extension) GETSTRUCT(tuple))->extnamespace;
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return nsp;
}

/*
 * The relation relname of schema nsp if the extension ext created it, else
 * InvalidOid.  Names alone could be redirected (a look-alike table in the
 * schema); membership of the extension cannot: only the extension's own
 * scripts add members, and a member cannot be dropped on its own.
 */
static Oid
member_relation(const char *relname, Oid nsp, Oid ext)
{
	Oid relid = get_relname_relid(relname, nsp);

	if (OidIsValid(relid) && getExtensionOfObject(RelationRelationId, relid) != ext)
		return InvalidOid;
	return relid;
}

/*
 * The schema named sandbox_store is not the extension's: someone renamed the
 * extension's schema and made another one of that name.  The statements name
 * sandbox_store.*, so nothing may run until that is undone.
 */
static void
report_schema_moved(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("schema \"sandbox_store\" is not the schema of extension sandbox_store"),
			 errdetail("The extension's schema was renamed, or another schema took its name; "
					   "calls are refused so that no record is read from or written to "
					   "tables the extension did not create."),
			 errhint("Rename the extension's schema back to sandbox_store.")));
}

/*
 * The extension's relations, found through the extension itself: its schema
 * from pg_extension, and only relations that are members of it.
 */
const SbRelations *
sb_relations(void)
{
	/*
	 * The lookups take in invalidations themselves (each catalog they open
	 * for the first time in a transaction); one that arrives meanwhile may
	 * concern what was already looked up, so look again until none does.
	 */
	while (!relations_known)
	{
		uint64 invalidations = relations_invalidations;
		Oid ext = get_extension_oid("sandbox_store", true);
		Oid nsp = OidIsValid(ext) ? extension_schema(ext) : InvalidOid;
		SbRelations found;

		if (!OidIsValid(nsp))
			sb_report_missing_table("instances");
		if (get_namespace_oid("sandbox_store", true) != nsp)
			report_schema_moved();
		found.instances = member_relation("instances", nsp, ext);
		found.leases = member_relation("leases", nsp, ext);
		found.fence_seq = member_relation("fence_seq", nsp, ext);
		found.citus = OidIsValid(get_extension_oid("citus", true));
		found.row_security = row_security_on(found.instances) || row_security_on(found.leases);
		if (invalidations == relations_invalidations)
		{
			relations = found;
			relations_known = true;
		}
	}
	return &relations;
}

/* A table (or index) of the extension is gone: the installation is broken. */
void
sb_report_missing_table(const char *name)
{
	ereport(ERROR, (errcode(ERRCODE_UNDEFINED_TABLE),
					errmsg("relation \"sandbox_store.%s\" does not exist", name),
					errhint("Reinstall the extension with DROP EXTENSION and CREATE EXTENSION.")));
}

/*
 * Row-level security on a managed table is refused, not half-applied: the
 * functions read and write the tables as their owner for every caller, so a
 * policy could only ever filter the owner, and the direct reads (which run
 * no query) would not see it at all.  Access is controlled by EXECUTE on the
 * functions instead.
 */
void
sb_report_row_security(void)
{
	ereport(
		ERROR,
		(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
		 errmsg("row-level security on the tables of sandbox_store is not supported"),
		 errdetail(
			 "The extension's functions read and write sandbox_store.instances and sandbox_store.leases as their owner for every caller, so a policy cannot tell callers apart."),
		 errhint(
			 "Run ALTER TABLE ... DISABLE ROW LEVEL SECURITY (and NO FORCE ROW LEVEL SECURITY) on them, and grant EXECUTE on the functions only to the roles that may use them.")));
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
	if (snapshot == NULL)
	{
		snapshot = GetActiveSnapshot();
		if (!IsolationUsesXactSnapshot() && snapshot_predates_ddl(RelationGetRelid(heap), snapshot))
			snapshot = GetLatestSnapshot();
	}
	if (sb_relations()->row_security)
		sb_report_row_security();
	pkey = RelationGetPrimaryKeyIndex(heap);
	if (!OidIsValid(pkey))
		sb_report_missing_table(which == SB_INSTANCES ? "instances_pkey" : "leases_pkey");
	index = index_open(pkey, AccessShareLock);
	/* The index's own collation, so the btree compares as it was built. */
	ScanKeyEntryInitialize(&skey, 0, 1, BTEqualStrategyNumber, InvalidOid,
						   index->rd_indcollation[0], F_TEXTEQ, PointerGetDatum(key));
	slot = table_slot_create(heap, NULL);
	scan = index_beginscan(heap, index, snapshot, 1, 0);
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
