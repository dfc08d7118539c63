/*-------------------------------------------------------------------------
 *
 * compat.h
 *	  The differences between the PostgreSQL major versions sandbox_store
 *	  builds against (15 to 19).  The only file that tests PG_VERSION_NUM.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SANDBOX_STORE_COMPAT_H
#define SANDBOX_STORE_COMPAT_H

#include "postgres.h"

#include "utils/rel.h"
#include "utils/relcache.h"

/*
 * A function that never returns.  PostgreSQL 18 replaced the attribute
 * written after a declaration (pg_attribute_noreturn()) with a specifier
 * written before it (pg_noreturn).
 */
#if PG_VERSION_NUM >= 180000
#define SB_NORETURN_BEFORE pg_noreturn
#define SB_NORETURN_AFTER
#else
#define SB_NORETURN_BEFORE
#define SB_NORETURN_AFTER pg_attribute_noreturn()
#endif

/*
 * The primary key index of a relation.  PostgreSQL 18 added whether a
 * deferrable one counts; the managed tables' primary keys are not
 * deferrable, so either answer is the same.
 */
#if PG_VERSION_NUM >= 180000
#define sb_primary_key_index(rel) RelationGetPrimaryKeyIndex((rel), false)
#else
#define sb_primary_key_index(rel) RelationGetPrimaryKeyIndex(rel)
#endif

/*
 * An index scan.  PostgreSQL 18 added the scan's instrumentation (EXPLAIN
 * ANALYZE's counters), which a probe outside any plan has none of; 19 added
 * scan option flags, of which a plain probe needs none.
 */
#if PG_VERSION_NUM >= 190000
#define sb_index_beginscan(heap, index, snapshot, nkeys, norderbys)                                \
	index_beginscan((heap), (index), (snapshot), NULL, (nkeys), (norderbys), SO_NONE)
#elif PG_VERSION_NUM >= 180000
#define sb_index_beginscan(heap, index, snapshot, nkeys, norderbys)                                \
	index_beginscan((heap), (index), (snapshot), NULL, (nkeys), (norderbys))
#else
#define sb_index_beginscan(heap, index, snapshot, nkeys, norderbys)                                \
	index_beginscan((heap), (index), (snapshot), (nkeys), (norderbys))
#endif

/*
 * The index entries of a tuple just inserted (not an update's, a duplicate
 * an error, no arbiter indexes): PostgreSQL 16 added whether only
 * summarizing indexes are to be updated; 19 made those three rules flags
 * and moved the slot after them.
 */
#if PG_VERSION_NUM >= 190000
#define sb_insert_index_tuples(rri, slot, estate)                                                  \
	ExecInsertIndexTuples((rri), (estate), 0, (slot), NIL, NULL)
#elif PG_VERSION_NUM >= 160000
#define sb_insert_index_tuples(rri, slot, estate)                                                  \
	ExecInsertIndexTuples((rri), (slot), (estate), false, false, NULL, NIL, false)
#else
#define sb_insert_index_tuples(rri, slot, estate)                                                  \
	ExecInsertIndexTuples((rri), (slot), (estate), false, false, NULL, NIL)
#endif

/*
 * Whether the search_path a cached plan was analyzed under (its
 * CachedPlanSource's search_path) is the current one: PostgreSQL 17 renamed
 * OverrideSearchPath to SearchPathMatcher.  The setting that adds a Gather
 * to every plan: PostgreSQL 16 renamed force_parallel_mode to
 * debug_parallel_query.
 */
#if PG_VERSION_NUM >= 170000
#define sb_search_path_matches(path) SearchPathMatchesCurrentEnvironment(path)
#else
#define sb_search_path_matches(path) OverrideSearchPathMatchesCurrent(path)
#endif
#if PG_VERSION_NUM >= 160000
#define SB_GUC_DEBUG_PARALLEL_QUERY "debug_parallel_query"
#else
#define SB_GUC_DEBUG_PARALLEL_QUERY "force_parallel_mode"
#endif

#endif /* SANDBOX_STORE_COMPAT_H */
