/*-------------------------------------------------------------------------
 *
 * sandbox_store.h
 *	  Shared declarations of the sandbox_store extension: the layout of the
 *	  managed tables, the lock namespace, and the entry points each source
 *	  file offers the others.
 *
 * The Anum_* constants give the order in which every SPI statement that
 * names the record columns selects them (RECORD_COLUMNS in store.c), so
 * attribute N of its result is record column N; the reader checks each
 * column's name (copy_record, sb_spi_value).  They match the order of a
 * fresh table's columns, but an admin may add, drop and re-add columns:
 * rows of the tables themselves are read by column name (sb_result_values,
 * direct.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef SANDBOX_STORE_H
#define SANDBOX_STORE_H

#include "postgres.h"

#include "compat.h"

#include "executor/spi.h"
#include "storage/lockdefs.h"
#include "utils/jsonb.h"
#include "utils/snapshot.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"

/* Columns of sandbox_store.instances, 1-based as in pg_attribute. */
#define Anum_instances_key                 1
#define Anum_instances_provider            2
#define Anum_instances_provider_sandbox_id 3
#define Anum_instances_latest_snapshot_id  4
#define Anum_instances_thread_id           5
#define Anum_instances_latest_run_id       6
#define Anum_instances_updated_at          7
#define Natts_instances                    7

/* Columns of sandbox_store.leases (version 1.1). */
#define Anum_leases_key              1
#define Anum_leases_fence            2
#define Anum_leases_owner_token      3
#define Anum_leases_lease_expires_at 4
#define Natts_leases                 4

/* Longest text value a record (or a run id) may hold, in bytes. */
#define SB_MAX_TEXT_BYTES 1024

/* The first byte of the keys reserved for the extension's own claims. */
#define SB_RESERVED_KEY_BYTE '\x01'

/*
 * Advisory locks of this extension carry this value in the lock tag's
 * fourth field (pg_locks.objsubid).  PostgreSQL's own pg_advisory_* functions
 * use 1 and 2 and Citus uses small values, so a key of ours never shares a
 * lock with an application's advisory lock.  ASCII "SB".
 */
#define SB_LOCK_CLASS 0x5342

/*
 * The one lock (per database) that orders draws of the fence sequence
 * (fences.c), in a class of its own next to the keys' so that it never
 * shares a lock with a key.
 */
#define SB_FENCE_LOCK_CLASS (SB_LOCK_CLASS + 1)

/*
 * The extension's own SQLSTATEs that C raises, in the order of
 * docs/reference.md's SQLSTATE table (class SB; the rest of the table is
 * raised by SQL, or is PostgreSQL's own).
 *
 *   SB001  a fenced write or renew whose claim has ended (released or taken
 *          over), or a run write of a stale driver epoch
 *   SB002  the library loaded in the session is older than the extension's
 *          installed version (catalog.c, sb_check_library_version)
 *   SBR02  the run is finished or its log is closed (run_log.c)
 *   SBC07  an invalid checkpoint id (checkpoint_check.c)
 *   SBC08  an invalid checkpoint entry (checkpoint_check.c)
 */
#define ERRCODE_SB_CLAIM_LOST       MAKE_SQLSTATE('S', 'B', '0', '0', '1')
#define ERRCODE_SB_LIBRARY_OUTDATED MAKE_SQLSTATE('S', 'B', '0', '0', '2')
#define ERRCODE_SB_RUN_FINISHED     MAKE_SQLSTATE('S', 'B', 'R', '0', '2')
#define ERRCODE_SBC_INVALID_ID      MAKE_SQLSTATE('S', 'B', 'C', '0', '7')
#define ERRCODE_SBC_INVALID_ENTRY   MAKE_SQLSTATE('S', 'B', 'C', '0', '8')

/*
 * The version of this library: the control file's default_version, which
 * the Makefile passes in.  The library serves a database at this version or
 * any older one, and refuses a newer one.
 */
#ifndef SB_LIBRARY_VERSION
#define SB_LIBRARY_VERSION "unknown"
#endif

/*
 * SB_ENTRY_1_4_1(fn): the SQL entry point fn also under the symbol fn_v1_4_1,
 * which the 1.4.1 scripts bind.  The 1.4 library has no such symbol, so a
 * session that loaded it before ALTER EXTENSION ... UPDATE TO '1.4.1' fails
 * its next call ("could not find function", 42883) instead of running 1.4's
 * code against 1.4.1; libraries from 1.4.1 on check the installed version
 * themselves (SB002).  The unsuffixed symbols stay for databases at 1.0 to
 * 1.4.
 */
#define SB_ENTRY_1_4_1(fn)                                                                         \
	PG_FUNCTION_INFO_V1(fn##_v1_4_1);                                                              \
	Datum fn##_v1_4_1(PG_FUNCTION_ARGS)                                                            \
	{                                                                                              \
		return fn(fcinfo);                                                                         \
	}

/* One record, as read from or written to the table. */
typedef struct SbRecord
{
	Datum values[Natts_instances];
	bool nulls[Natts_instances];
} SbRecord;

/* A claim on a key (lease mode). */
typedef struct SbClaim
{
	int64 fence;
	pg_uuid_t owner_token;
	TimestampTz lease_expires_at;
} SbClaim;

/*
 * A statement run through SPI: its text, argument types, the SPI_OK_* code
 * it must return, and its plan (kept for the backend).
 */
typedef struct SbStatement
{
	const char *sql;
	int nargs;
	Oid argtypes[8];
	int expect;
	SPIPlanPtr plan;
} SbStatement;

/* How long a caller may wait for a key: from the wait argument. */
typedef struct SbWait
{
	const Interval *wait; /* the argument (NULL: as the session allows) */
	bool bounded;         /* false: no bound but the session's timeouts */
	TimestampTz deadline; /* when bounded */
	bool by_lock_timeout; /* the deadline is lock_timeout's, not the wait's */
} SbWait;

/* validate.c */
extern text *sb_required_text(FunctionCallInfo fcinfo, int argno, const char *argname);
extern text *sb_required_key(FunctionCallInfo fcinfo, int argno);
extern text *sb_optional_text(FunctionCallInfo fcinfo, int argno, const char *argname);
extern Interval *sb_optional_interval(FunctionCallInfo fcinfo, int argno, const char *argname);
extern Interval *sb_positive_interval(FunctionCallInfo fcinfo, int argno, const char *argname,
									  bool required);
extern TimestampTz sb_required_timestamp(FunctionCallInfo fcinfo, int argno, const char *argname);
extern pg_uuid_t *sb_required_uuid(FunctionCallInfo fcinfo, int argno, const char *argname);
extern bool sb_optional_fence(FunctionCallInfo fcinfo, int argno, int64 *fence);
extern int64 sb_required_fence(FunctionCallInfo fcinfo, int argno);
extern Interval *sb_required_interval(FunctionCallInfo fcinfo, int argno, const char *argname);
extern int32 sb_positive_int32(FunctionCallInfo fcinfo, int argno, const char *argname);

/* clock.c: time arithmetic in UTC */
extern double sb_interval_reach(const Interval *value);
extern TimestampTz sb_cutoff(const Interval *age);
extern TimestampTz sb_lease_expiry(TimestampTz from, const Interval *lease);

/* spi.c */
extern void sb_spi_connect(void);
extern void sb_spi_finish(void);
extern Datum sb_spi_value(const SPITupleTable *table, uint64 row, int attnum, const char *name);
extern SPIPlanPtr sb_spi_plan(SbStatement *stmt);
extern uint64 sb_spi_execute(SbStatement *stmt, Datum *args, const char *nulls, bool read_only,
							 Snapshot snapshot);
extern Portal sb_spi_cursor_open(SbStatement *stmt, Datum *args, const char *nulls);
extern uint64 sb_spi_cursor_fetch(Portal portal, long count);
extern void sb_as_owner_begin(Oid *save_userid, int *save_sec_context);
extern void sb_as_owner_end(Oid save_userid, int save_sec_context);

/* catalog.c: the managed relations, their owner, citus (one cache); the call in progress */
typedef struct SbRelations
{
	Oid extension; /* sandbox_store itself */
	Oid instances;
	Oid leases;                     /* InvalidOid before version 1.1 */
	Oid fence_seq;                  /* InvalidOid before version 1.1 */
	bool claims;                    /* the installed version has claims (1.1 and later) */
	Oid owner;                      /* of instances: the role statements run as */
	bool citus;                     /* the citus extension is installed */
	bool row_security;              /* enabled and forced on a managed table: refused */
	const char *row_security_table; /* the first such table, for the error */
	Oid runs;                       /* InvalidOid before version 1.5 */
	bool runs_row_security;         /* enabled and forced on runs: no direct read of it */
	Oid run_log_entries;            /* InvalidOid before version 1.5 */
} SbRelations;

/* sandbox_store.c: the setting sandbox_store.max_checkpoint_bytes (0: no limit) */
extern int sb_max_checkpoint_bytes;

extern void sb_catalog_init(void);
extern void sb_check_library_version(void);
extern void sb_call_begin(void);
extern void sb_call_end(void);
extern void sb_call_check(void);
extern void sb_check_function(Oid fn_oid);
extern const SbRelations *sb_relations(void);
SB_NORETURN_BEFORE extern void sb_report_missing_table(const char *name) SB_NORETURN_AFTER;
SB_NORETURN_BEFORE extern void sb_report_row_security(void) SB_NORETURN_AFTER;

/* direct.c: direct primary-key reads and their setting */
extern void sb_direct_init(void);
extern bool sb_direct_reads(void);
typedef enum SbTable
{
	SB_INSTANCES,
	SB_LEASES,
	SB_RUNS,
	SB_RUN_LOG_ENTRIES
} SbTable;

extern bool sb_lock_table_for_read(SbTable which);
extern HeapTuple sb_direct_fetch(SbTable which, const text *key, Snapshot snapshot,
								 TupleDesc *desc);
extern HeapTuple sb_direct_fetch_next(SbTable which, const text *key, TupleDesc *desc);
extern bool sb_direct_inserts(void);
extern bool sb_direct_insert_entries(const text *run_id, int64 after, Jsonb *chunks);

/* locks.c: the per-key advisory lock itself */
extern uint64 sb_lock_id(const text *key);
extern bool sb_advisory_lock(const text *key, bool dont_wait);
extern void sb_unlock_key(const text *key);
extern void sb_fence_draw_lock(LOCKMODE mode);
extern void sb_fence_draw_unlock(LOCKMODE mode);

/* claims.c: the leases table (claims, and the fence checks of fenced writes) */
typedef enum SbClaimState
{
	CLAIM_NONE,    /* no claim holds the key */
	CLAIM_EXPIRED, /* a claim whose lease ran out, not taken over yet */
	CLAIM_LIVE     /* a claim holds the key */
} SbClaimState;

extern bool sb_claims_enabled(void);
extern bool sb_claim_token_set(const text *key);
extern SbClaimState sb_claim_state(const text *key, SbClaim *claim);
extern bool sb_retire_claim(const text *key);
extern bool sb_key_free(const text *key, SbClaim *claim);
extern bool sb_take_claim(const text *key, const Interval *lease, SbClaim *claim);
extern bool sb_renew_claim(const text *key, const pg_uuid_t *token, const Interval *lease,
						   TimestampTz *expires);
extern bool sb_release_claim(const text *key, const pg_uuid_t *token);
extern void sb_release_fenced(const text *key, int64 fence);
extern void sb_check_fence(const text *key, int64 fence);
extern void sb_require_lease_mode(void);
typedef enum SbClaimLost
{
	SB_LOST_TOKEN,         /* the owner token no longer holds the claim */
	SB_LOST_FENCE_OLD,     /* fenced with an older fence than the key's */
	SB_LOST_FENCE_FOREIGN, /* fenced with a number never given for the key */
	SB_LOST_FENCE_ENDED    /* fenced with the key's fence, whose claim was released */
} SbClaimLost;
SB_NORETURN_BEFORE extern void sb_report_claim_lost(const text *key, SbClaimLost how, int64 fence,
													int64 newest) SB_NORETURN_AFTER;

/* fences.c: the fence sequence and its draws */
extern int64 sb_draw_fence(int64 above);
extern void sb_flush_fences(void);
extern int64 sb_draw_claim_fence(int64 above);

/* take.c: taking a key (waits, claims in the way, 55P03, the lock's scope) */
extern SbWait sb_wait_from(const Interval *wait);
extern void sb_check_lock_scope(const char *fname);
extern bool sb_lock_ends_with_statement(void);
extern void sb_lock_key(const text *key, const SbWait *wait);
extern void sb_back_off(const text *key, const SbWait *wait, const SbClaim *blocker, int *delay_ms);
extern void sb_acquire_key(const text *key, const SbWait *wait);

/* result.c */
extern void sb_result_init(void);
extern TupleDesc sb_result_desc(FunctionCallInfo fcinfo, const char *fname, int natts_min,
								int natts_max);
extern TupleDesc sb_result_planned_desc(FunctionCallInfo fcinfo, TupleDesc desc);
extern void sb_result_values(TupleDesc desc, HeapTuple src, TupleDesc srcdesc, Datum *values,
							 bool *nulls);

/* store.c */
extern bool sb_store_stamp(const text *key, const text *run_id, const Interval *max_age,
						   const text *provider, SbRecord *out);
extern bool sb_store_lookup(const text *key, SbRecord *out);

#endif /* SANDBOX_STORE_H */
