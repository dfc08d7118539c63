/*-------------------------------------------------------------------------
 *
 * sandbox_store.h
 *	  Shared declarations of the sandbox_store extension: the layout of the
 *	  managed table sandbox_store.instances, the lock namespace, and the
 *	  entry points each source file offers the others.
 *
 * The Anum_* constants mirror the column order of sandbox_store.instances
 * (sql/sandbox_store--1.0.sql).  Every SPI statement in store.c selects the
 * record columns in exactly this order, so a result tuple's attribute N is
 * the table's column N.  Upgrade scripts may only add columns at the end.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SANDBOX_STORE_H
#define SANDBOX_STORE_H

#include "postgres.h"

#include "utils/timestamp.h"

/* Columns of sandbox_store.instances, 1-based as in pg_attribute. */
#define Anum_instances_key                 1
#define Anum_instances_provider            2
#define Anum_instances_provider_sandbox_id 3
#define Anum_instances_latest_snapshot_id  4
#define Anum_instances_thread_id           5
#define Anum_instances_latest_run_id       6
#define Anum_instances_updated_at          7
#define Natts_instances                    7

/* Longest text value a record (or a run id) may hold, in bytes. */
#define SB_MAX_TEXT_BYTES 1024

/*
 * Advisory locks of this extension carry this value in the lock tag's
 * fourth field (pg_locks.objsubid).  PostgreSQL's own pg_advisory_* functions
 * use 1 and 2 and Citus uses small values, so a key of ours never shares a
 * lock with an application's advisory lock.  ASCII "SB".
 */
#define SB_LOCK_CLASS 0x5342

/* One record, as read from or written to the table. */
typedef struct SbRecord
{
	Datum values[Natts_instances];
	bool nulls[Natts_instances];
} SbRecord;

/* validate.c */
extern text *sb_required_text(FunctionCallInfo fcinfo, int argno, const char *argname);
extern text *sb_optional_text(FunctionCallInfo fcinfo, int argno, const char *argname);
extern Interval *sb_optional_interval(FunctionCallInfo fcinfo, int argno, const char *argname);
extern TimestampTz sb_required_timestamp(FunctionCallInfo fcinfo, int argno, const char *argname);

/* locks.c */
extern uint64 sb_lock_id(const text *key);
extern void sb_lock_key(const text *key, const Interval *wait);

/* store.c */
extern void sb_store_init(void);
extern bool sb_store_stamp(const text *key, const text *run_id, const Interval *max_age,
						   const text *provider, SbRecord *out);
extern bool sb_store_lookup(const text *key, SbRecord *out);

#endif /* SANDBOX_STORE_H */
