/*-------------------------------------------------------------------------
 *
 * fences.c
 *	  The fence sequence sandbox_store.fence_seq and its draws: a key's new
 *	  fence, drawn above the key's newest (sb_draw_fence), and the WAL that
 *	  covers the fences handed out, made durable (sb_flush_fences); and for
 *	  the checkpoint writers, which SQL code claims itself, both at once
 *	  (sb_draw_claim_fence).  The only file that draws from or sets the
 *	  sequence; the leases rows that keep each key's fence are claims.c's.
 *	  The lock that orders the draws is locks.c's.  Like every helper that
 *	  runs statements, these run in the caller's SPI connection (spi.c).
 *
 * A key's new fence is always a value of the sequence
 * sandbox_store.fence_seq, drawn above the key's newest fence (sb_draw_fence):
 * when the sequence is behind the key (set back by an admin, a node's own
 * sequence on a distributed cluster after the key's row moved there, a
 * logical-replication switchover: sequences are not replicated), it is
 * moved up to the key's fence first, never back, and drawn again.  So
 * fences strictly increase per key whatever the sequence did, increase
 * across keys on one server, and survive a crash restart: every fence
 * handed out is one the sequence produced, and the WAL that covers it is
 * flushed before it leaves the server (sb_flush_fences); sequences never
 * hand out a logged value twice.  Dump/restore keeps them too (the sequence
 * and the rows are dumped).
 *
 *-------------------------------------------------------------------------
 */
#include "sandbox_store.h"

#include "access/relation.h"
#include "access/xlog.h"
#include "storage/bufmgr.h"
#include "catalog/pg_type.h"
#include "commands/sequence.h"

/* Move the fence sequence ($1) up to $2 (sb_draw_fence; as the owner). */
static SbStatement fence_raise = {
	"SELECT pg_catalog.setval($1, $2)", 2, {REGCLASSOID, INT8OID}, SPI_OK_SELECT};

/*
 * The fence sequence.  Only called where claims exist, and catalog.c
 * reports (42P01) a version with claims whose sequence is not found.
 */
static Oid
fence_sequence(void)
{
	Oid seq = sb_relations()->fence_seq;

	if (!OidIsValid(seq))
		sb_report_missing_table("fence_seq");
	return seq;
}

/*
 * A new fence for a key whose newest fence is above (0: never claimed): the
 * next value of the fence sequence, which is above it unless the sequence
 * is behind the key.  Then the sequence is moved up to above and drawn
 * again, so that every fence handed out is a value the sequence produced
 * and the WAL that sb_flush_fences makes durable covers it.
 *
 * setval must never move the sequence back: a larger value drawn meanwhile
 * for another key, then a crash, would let that value be handed out again
 * for that key.  So every draw holds the fence-draw lock in ShareLock for
 * its nextval, and moving the sequence up holds it in ExclusiveLock: no
 * other draw runs between the value read under it and the setval, which
 * happens only if that value is still not above the key's fence.  (Only
 * callers of this extension are ordered so; an admin's own setval is what
 * this repairs after.)
 *
 * The caller may call the functions, so no privilege on the sequence is
 * checked for nextval; setval runs as the tables' owner (spi.c).
 */
int64
sb_draw_fence(int64 above)
{
	Oid seq = fence_sequence();
	int64 fence;

	sb_fence_draw_lock(ShareLock);
	fence = nextval_internal(seq, false);
	sb_fence_draw_unlock(ShareLock);
	if (fence > above)
		return fence;

	sb_fence_draw_lock(ExclusiveLock);
	fence = nextval_internal(seq, false);
	if (fence <= above)
	{
		Datum args[2];

		args[0] = ObjectIdGetDatum(seq);
		args[1] = Int64GetDatum(above);
		(void) sb_spi_execute(&fence_raise, args, NULL, false, InvalidSnapshot);
		fence = nextval_internal(seq, false);
	}
	sb_fence_draw_unlock(ExclusiveLock);
	if (fence <= above)
		elog(ERROR,
			 "sequence sandbox_store.fence_seq gave " INT64_FORMAT
			 " after being set to " INT64_FORMAT,
			 fence, above);
	return fence;
}

/*
 * Make the WAL record that covers every fence handed out so far durable.
 * nextval WAL-logs the sequence ahead of the values it returns and stamps
 * the sequence page with that record's end, so flushing up to the page LSN
 * is exactly enough (whichever backend logged it).
 */
void
sb_flush_fences(void)
{
	Relation rel;
	Buffer buf;
	XLogRecPtr lsn;

	rel = relation_open(fence_sequence(), AccessShareLock);
	buf = ReadBuffer(rel, 0);
	LockBuffer(buf, BUFFER_LOCK_SHARE);
	lsn = PageGetLSN(BufferGetPage(buf));
	UnlockReleaseBuffer(buf);
	relation_close(rel, AccessShareLock);
	XLogFlush(lsn);
}

/*
 * A fence above `above`, drawn as for a claim and made durable: for claims
 * the SQL-level code takes itself (the checkpoint writers,
 * sandbox_store._draw_claim_fence).
 */
int64
sb_draw_claim_fence(int64 above)
{
	int64 fence = sb_draw_fence(above);

	sb_flush_fences();
	return fence;
}
