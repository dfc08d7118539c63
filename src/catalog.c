/*-------------------------------------------------------------------------
 *
 * catalog.c
 *	  What every path needs to know about the managed tables, cached per
 *	  backend and looked up again after any relation, column or schema
 *	  changed: which relations they are (found through the extension, so a
 *	  renamed schema or a look-alike table cannot redirect them), which of
 *	  them the installed version has (from pg_extension.extversion, never
 *	  from whether a relation of that name is found), who owns them (the
 *	  role statements run as), whether row-level security is forced on them
 *	  (refused), whether a key has a nondeterministic collation (refused),
 *	  whether citus is installed, and whether the extension of a call in
 *	  progress was dropped while the call waited, and whether the installed
 *	  version is newer than this library.  Also the errors for a missing
 *	  table, a moved schema, row-level security, such a collation, a call
 *	  whose extension was dropped or updated under it, and a library older
 *	  than the installed extension.
 *
 * One cache, one invalidation callback (for pg_class, pg_attribute and
 * pg_namespace changes: CREATE EXTENSION citus and ALTER EXTENSION
 * sandbox_store UPDATE make them, and so do ALTER TABLE ... OWNER, ... ROW
 * LEVEL SECURITY, ... RENAME, ... SET SCHEMA and ... ALTER COLUMN ... TYPE).
 * The bottom of the house: it calls no other file of the extension.
 *
 *-------------------------------------------------------------------------
 */
#include "sandbox_store.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "catalog/dependency.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_index.h"
#include "commands/extension.h"
#include "storage/sinval.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

/*
 * The extension's relations, whether row-level security is forced on a
 * managed table, and whether citus is installed: looked up again after any
 * relation or schema is created, dropped or renamed (which CREATE EXTENSION citus and
 * ALTER EXTENSION sandbox_store UPDATE both do), or any column changed (a
 * key given another collation: the primary key is rebuilt too, but the
 * column's own change is what says so).  The installed version changes
 * which relations exist only from 1.0 to 1.1, an update that creates them.
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

/*
 * Whether the installed version was compared with this library's since the
 * session's first call and since any function changed.  pg_extension has no
 * cache whose invalidation would say that ALTER EXTENSION UPDATE ran, but
 * every update script makes the extension's C functions again (from 1.4.1
 * each binds a symbol of its version), which invalidates pg_proc in every
 * backend: the version is read again (one index lookup) at the next call
 * after any pg_proc change, also in a transaction that was open when the
 * update committed, and never on the hot path otherwise.
 */
static bool version_checked = false;

static void
version_unchecked(Datum arg, int cacheid, uint32 hashvalue)
{
	version_checked = false;
}

void
sb_catalog_init(void)
{
	CacheRegisterSyscacheCallback(RELNAMENSP, relations_changed, (Datum) 0);
	CacheRegisterSyscacheCallback(NAMESPACEOID, relations_changed, (Datum) 0);
	CacheRegisterSyscacheCallback(ATTNUM, relations_changed, (Datum) 0);
	CacheRegisterSyscacheCallback(PROCOID, version_unchecked, (Datum) 0);
}

/*
 * Whether version a is newer than version b: their dot-separated numbers
 * compared from the left (a missing number is 0, so 1.4.1 is newer than 1.4).
 */
static bool
version_newer(const char *a, const char *b)
{
	while (*a != '\0' || *b != '\0')
	{
		char *a_end;
		char *b_end;
		long na = strtol(a, &a_end, 10);
		long nb = strtol(b, &b_end, 10);

		if (na != nb)
			return na > nb;
		a = a_end;
		b = b_end;
		if (*a == '.')
			a++;
		else if (*a != '\0')
			return false; /* not a version of ours: never taken for newer */
		if (*b == '.')
			b++;
		else if (*b != '\0')
			return false;
	}
	return false;
}

/*
 * The session runs this library, and the extension in its database is at a
 * newer version: ALTER EXTENSION UPDATE ran after the session loaded the
 * library (a backend cannot load another one), or the new version's scripts
 * were installed without its library.
 */
static void
report_library_outdated(const char *installed)
{
	ereport(ERROR,
			(errcode(ERRCODE_SB_LIBRARY_OUTDATED),
			 errmsg("the sandbox_store library loaded in this session is older than the installed "
					"extension"),
			 errdetail("This session runs the library of sandbox_store %s, and the extension in "
					   "this database is at version %s: it was updated after the session loaded "
					   "the library, and a session cannot load another.  The call was refused and "
					   "changed nothing, so that no rule of %s is applied to version %s.",
					   SB_LIBRARY_VERSION, installed, SB_LIBRARY_VERSION, installed),
			 errhint("Reconnect: a new session loads the installed library (connection pools must "
					 "replace the connections they opened before the update).  If a new session "
					 "is refused too, install the library of version %s.",
					 installed)));
}

/*
 * Refuse (SB002) to serve a database whose installed sandbox_store is newer
 * than this library.  Every SQL entry point calls it before it does
 * anything; it reads pg_extension at the session's first call and again
 * after a function changed, and otherwise costs a look at the invalidation
 * queue.  A database at this version or an older one is served by that
 * version's rules.
 */
void
sb_check_library_version(void)
{
	Relation rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple tuple;
	char *installed = NULL;

	/*
	 * A transaction that already ran a statement takes in invalidations only
	 * when it locks something new: take them in here (cheap when none is
	 * pending), or an update that committed meanwhile goes unseen.
	 */
	AcceptInvalidationMessages();
	if (version_checked)
		return;
	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_extension_extname, BTEqualStrategyNumber, F_NAMEEQ,
				CStringGetDatum("sandbox_store"));
	scan = systable_beginscan(rel, ExtensionNameIndexId, true, NULL, 1, &key);
	tuple = systable_getnext(scan);
	if (HeapTupleIsValid(tuple))
	{
		bool isnull;
		Datum version =
			heap_getattr(tuple, Anum_pg_extension_extversion, RelationGetDescr(rel), &isnull);

		if (!isnull)
			installed = TextDatumGetCString(version);
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	/* no extension: the relations' lookup says so */
	if (installed != NULL && version_newer(installed, SB_LIBRARY_VERSION))
		report_library_outdated(installed);
	if (installed != NULL)
		pfree(installed);
	version_checked = true;
}

/*
 * What pg_class says of relid that every call needs: its owner (InvalidOid
 * for none) and whether row-level security applies to that owner: enabled
 * and forced (enabled alone exempts the owner, and forced alone applies
 * nothing, as PostgreSQL has it).
 */
static void
read_relation(Oid relid, Oid *owner, bool *row_security)
{
	HeapTuple tuple;

	*owner = InvalidOid;
	*row_security = false;
	if (!OidIsValid(relid))
		return;
	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	if (!HeapTupleIsValid(tuple))
		return;
	*owner = ((Form_pg_class) GETSTRUCT(tuple))->relowner;
	*row_security = ((Form_pg_class) GETSTRUCT(tuple))->relrowsecurity &&
					((Form_pg_class) GETSTRUCT(tuple))->relforcerowsecurity;
	ReleaseSysCache(tuple);
}

/*
 * The schema extension ext was created in (pg_extension.extnamespace), and
 * whether its installed version has claims (pg_extension.extversion: every
 * version but 1.0 has leases and fence_seq).
 */
static Oid
extension_schema(Oid ext, bool *claims)
{
	Relation rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple tuple;
	Oid nsp = InvalidOid;

	*claims = false;
	ScanKeyInit(&key, Anum_pg_extension_oid, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(ext));
	scan = systable_beginscan(rel, ExtensionOidIndexId, true, NULL, 1, &key);
	tuple = systable_getnext(scan);
	if (HeapTupleIsValid(tuple))
	{
		bool isnull;
		Datum version =
			heap_getattr(tuple, Anum_pg_extension_extversion, RelationGetDescr(rel), &isnull);

		nsp = ((Form_pg_extension) GETSTRUCT(tuple))->extnamespace;
		if (!isnull)
		{
			char *name = TextDatumGetCString(version);

			*claims = strcmp(name, "1.0") != 0;
			pfree(name);
		}
	}
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
 * A nondeterministic collation on the key is refused: each key's lock is
 * taken on the key's exact bytes (locks.c), so keys such a collation calls
 * equal would share a record but not a lock.
 */
static void
report_key_collation(const char *relname, Oid collation)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("a nondeterministic collation on the key of sandbox_store.%s is not supported",
					relname),
			 errdetail("Keys that collation \"%s\" treats as equal would share a record but not "
					   "a lock: each key's lock is taken on its exact bytes.",
					   get_collation_name(collation)),
			 errhint("Give the key column its default collation back, and drop any unique index "
					 "on key with another collation.")));
}

/*
 * Refuse (0A000) a nondeterministic collation on column key of relid (the
 * relation relname): on the column itself, or on key in a unique index of
 * the table (which ON CONFLICT (key) could take as its arbiter).  The
 * primary key follows the column's collation.
 */
static void
check_key_collation(Oid relid, const char *relname)
{
	AttrNumber attnum = get_attnum(relid, "key");
	Oid typid;
	int32 typmod;
	Oid collation;
	Relation rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple tuple;

	if (attnum == InvalidAttrNumber)
		return; /* statements naming it fail */
	get_atttypetypmodcoll(relid, attnum, &typid, &typmod, &collation);
	if (OidIsValid(collation) && !get_collation_isdeterministic(collation))
		report_key_collation(relname, collation);

	rel = table_open(IndexRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_index_indrelid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(relid));
	scan = systable_beginscan(rel, IndexIndrelidIndexId, true, NULL, 1, &key);
	while (HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		Form_pg_index index = (Form_pg_index) GETSTRUCT(tuple);
		bool isnull;
		Datum datum;
		oidvector *collations;

		if (!index->indisunique)
			continue;
		datum = heap_getattr(tuple, Anum_pg_index_indcollation, RelationGetDescr(rel), &isnull);
		if (isnull)
			continue;
		collations = (oidvector *) DatumGetPointer(datum);
		for (int i = 0; i < index->indnkeyatts && i < collations->dim1; i++)
		{
			Oid c = collations->values[i];

			if (index->indkey.values[i] == attnum && OidIsValid(c) &&
				!get_collation_isdeterministic(c))
				report_key_collation(relname, c);
		}
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
}

/*
 * The extension's relations, found through the extension itself: its schema
 * from pg_extension, and only relations that are members of it.  Which
 * relations the installed version has comes from its version: one of them
 * that is not found under its name (renamed, moved to another schema, or a
 * look-alike in its place) is missing (42P01), never taken for a version
 * without it.
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
		bool claims = false;
		Oid nsp = OidIsValid(ext) ? extension_schema(ext, &claims) : InvalidOid;
		SbRelations found;

		if (!OidIsValid(nsp))
			sb_report_missing_table("instances");
		if (get_namespace_oid("sandbox_store", true) != nsp)
			report_schema_moved();
		found.claims = claims;
		found.instances = member_relation("instances", nsp, ext);
		found.leases = claims ? member_relation("leases", nsp, ext) : InvalidOid;
		found.fence_seq = claims ? member_relation("fence_seq", nsp, ext) : InvalidOid;
		found.extension = ext;
		if (!OidIsValid(found.instances))
			sb_report_missing_table("instances");
		if (claims && !OidIsValid(found.leases))
			sb_report_missing_table("leases");
		if (claims && !OidIsValid(found.fence_seq))
			sb_report_missing_table("fence_seq");
		check_key_collation(found.instances, "instances");
		if (claims)
			check_key_collation(found.leases, "leases");
		found.citus = OidIsValid(get_extension_oid("citus", true));
		{
			Oid leases_owner;
			bool instances_rls;
			bool leases_rls;

			read_relation(found.instances, &found.owner, &instances_rls);
			read_relation(found.leases, &leases_owner, &leases_rls);
			found.row_security = instances_rls || leases_rls;
			found.row_security_table = instances_rls ? "instances" : (leases_rls ? "leases" : NULL);
		}
		{
			Oid runs_owner;

			/* Found only to be used directly: a statement finds them (or fails) by name. */
			found.runs = member_relation("runs", nsp, ext);
			read_relation(found.runs, &runs_owner, &found.runs_row_security);
			found.run_log_entries = member_relation("run_log_entries", nsp, ext);
		}
		if (invalidations == relations_invalidations)
		{
			relations = found;
			relations_known = true;
		}
	}
	return &relations;
}

/*
 * The extension of the call in progress (as it was when the call began),
 * and the count of invalidation messages taken in when it was last known to
 * exist.  A call that waits (for a key's lock, a claim, a table) may wake up
 * after DROP EXTENSION sandbox_store, and CREATE EXTENSION of a new one,
 * committed meanwhile: the function it runs in, its result type, the
 * relations and plans it knew are gone, and looking them up fails with
 * "cache lookup failed" (XX000), or finds the new extension's tables.  Such
 * a call is stopped with an error of its own.  (ALTER EXTENSION UPDATE keeps
 * the extension: a call in flight across it goes on.)
 */
static Oid call_extension = InvalidOid;
static uint64 call_invalidations = 0;

static void
report_dropped_in_flight(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("extension sandbox_store was dropped while the call waited"),
			 errdetail("DROP EXTENSION sandbox_store committed while the call waited for a key, a "
					   "claim or a table.  The call was stopped and changed nothing."),
			 errhint("Run the transaction again.")));
}

static void
report_replaced_in_flight(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("extension sandbox_store was updated while the call waited"),
			 errdetail("ALTER EXTENSION sandbox_store UPDATE replaced the function called while "
					   "the call waited for a key, a claim or a table.  The call was stopped and "
					   "changed nothing."),
			 errhint("Run the transaction again.")));
}

/* A call of one of the extension's SQL functions begins (sb_spi_connect). */
void
sb_call_begin(void)
{
	sb_check_library_version();
	call_extension = sb_relations()->extension;
	call_invalidations = SharedInvalidMessageCounter;
}

void
sb_call_end(void)
{
	call_extension = InvalidOid;
}

/* Raise the error above if the extension of the call in progress is gone. */
static void
check_extension(void)
{
	if (OidIsValid(call_extension) && get_extension_oid("sandbox_store", true) != call_extension)
		report_dropped_in_flight();
}

/*
 * Stop the call in progress if its extension was dropped.  Takes in
 * invalidations first (a wait for an advisory lock does not); the catalog
 * is looked at only when some arrived since the last look, so a call pays
 * for this once per wait that let DDL in, not per statement.
 */
void
sb_call_check(void)
{
	AcceptInvalidationMessages();
	if (call_invalidations == SharedInvalidMessageCounter)
		return;
	call_invalidations = SharedInvalidMessageCounter;
	check_extension();
}

/*
 * The function fn_oid, which the call in progress runs in, is about to be
 * looked up: stop the call if it is gone, dropped with the extension or
 * replaced by an update while the call waited.
 */
void
sb_check_function(Oid fn_oid)
{
	if (SearchSysCacheExists1(PROCOID, ObjectIdGetDatum(fn_oid)))
		return;
	check_extension();
	report_replaced_in_flight();
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
 * Row-level security forced on a managed table is refused, not half-applied.
 * The functions read and write the tables as their owner for every caller,
 * so they are treated as the owner's own statements are: enabled
 * without FORCE, row-level security does not apply to the owner and calls
 * run; forced, it would, but the direct reads (which run no query) could not apply a
 * policy, and a policy could only ever filter the owner.  So a call fails as
 * the owner's statement fails with row_security off, which is how the SQL
 * edition's functions run: 42501 with PostgreSQL's message and hint.  (A
 * superuser owner is refused too, where PostgreSQL would exempt it.)
 */
void
sb_report_row_security(void)
{
	ereport(
		ERROR,
		(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
		 errmsg("query would be affected by row-level security policy for table \"%s\"",
				relations.row_security_table),
		 errdetail(
			 "Row-level security is forced on sandbox_store.%s, and the extension's functions read and write it as its owner for every caller: they cannot apply a policy, and a policy could not tell callers apart.",
			 relations.row_security_table),
		 errhint(
			 "To disable the policy for the table's owner, use ALTER TABLE NO FORCE ROW LEVEL SECURITY.")));
}
