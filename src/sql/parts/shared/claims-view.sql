-- Live claims: lease-mode claims on keys, and the checkpoint writers (1.9.0:
-- rows of checkpoint_writers, shown under their thread's reserved key
-- E'\x01checkpoint-writer\x01' || thread_id, as they were when they were
-- claims in leases).  The key is written out: a view's functions are checked
-- against its caller's privileges, and no caller may use
-- sandbox_store_internal.
CREATE OR REPLACE VIEW sandbox_store.claims AS
SELECT l.key, l.fence, l.owner_token, l.lease_expires_at
  FROM sandbox_store.leases l
 WHERE l.owner_token IS NOT NULL
   AND l.lease_expires_at OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp()
UNION ALL
SELECT E'\x01checkpoint-writer\x01' OPERATOR(pg_catalog.||) w.thread_id, w.fence, w.owner_token, w.lease_expires_at
  FROM sandbox_store.checkpoint_writers w
 WHERE w.owner_token IS NOT NULL
   AND w.lease_expires_at OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp();
COMMENT ON VIEW sandbox_store.claims IS
'Live claims: keys held in lease mode and the threads'' checkpoint writers (under their reserved keys), with their fence, owner token and expiry.';
