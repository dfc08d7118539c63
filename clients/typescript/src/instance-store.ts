import type { Pool, QueryResultRow } from 'pg';

import { InvalidArgumentError } from './errors.js';
import { findHold } from './internal/frames.js';
import { findTx } from './internal/lock-tx.js';
import { connectTimeoutOption, poolQuery } from './internal/pool.js';
import {
  DELETE_SQL,
  GET_SQL,
  LIST_SQL,
  UPSERT_SQL,
  recordFromRow,
  storableKey,
  textArg,
  timestamptzLiteral,
  type RecordRow,
} from './internal/sql.js';
import type { SandboxInstanceRecord, SandboxInstanceStore } from './types.js';

/** The instance store, plus what this package adds to the contract. */
export interface PgSandboxInstanceStore extends SandboxInstanceStore {
  /** The records of a thread, most recently updated first (`sandbox_list`). */
  list: (threadId: string) => Promise<SandboxInstanceRecord[]>;
}

export interface InstanceStoreOptions {
  /** How long a call waits for a connection of the pool (default 30 000 ms). */
  connectTimeoutMs?: number;
}

/**
 * A {@link SandboxInstanceStore} over the extension's `sandbox_get`,
 * `sandbox_upsert` and `sandbox_delete`.
 *
 * - `get` of a missing key resolves `null`, also of a key no record can have
 *   (empty, over 1024 bytes, containing NUL); absent optional fields are
 *   absent keys; `updatedAt` comes back as the number that was written.
 * - `upsert` fully replaces the record (optional fields that are absent,
 *   `undefined` or `null` clear what was stored).
 * - `delete` of a missing key (or of one no record can have) resolves
 *   `undefined`.  It takes the key's lock,
 *   so it waits for an ensure or a lock-mode section (or a live claim) on the
 *   key (as `lock_timeout` allows).
 *
 * Inside `withLock` / `ensureSandbox` of a key over the **same pool**, calls
 * for that key are made as the holder: in lock mode in the section's
 * transaction (committed with it, refused once the lock was lost), in lease
 * mode with the claim's fence (`ClaimLostError` once someone took the key over).
 * Inside a lock-mode section, calls for other keys run in the section's
 * transaction too (they need no second connection, and commit with it).
 * Every error is a `SandboxStoreError` (the SQLSTATE on `sqlstate`).
 */
export function createInstanceStore(pool: Pool, options: InstanceStoreOptions = {}): PgSandboxInstanceStore {
  const connectTimeoutMs = connectTimeoutOption(options.connectTimeoutMs);

  // As the holder of the key if this call chain holds it, in the chain's
  // lock-mode transaction if it has one, else through the pool.
  function run<R extends QueryResultRow>(key: string | null, text: string, values: readonly unknown[]) {
    const hold = (key === null ? undefined : findHold(pool, key)) ?? findTx(pool);
    return hold !== undefined ? hold.query<R>(text, values) : poolQuery<R>(pool, text, values, connectTimeoutMs);
  }

  return {
    async get(key: string): Promise<SandboxInstanceRecord | null> {
      if (typeof key === 'string' && !storableKey(key)) return null;
      const result = await run<RecordRow>(key, GET_SQL, [textArg(key, 'key')]);
      const row = result.rows[0];
      return row === undefined ? null : recordFromRow(row);
    },

    async upsert(record: SandboxInstanceRecord): Promise<void> {
      if (typeof record !== 'object' || record === null) {
        throw new InvalidArgumentError('record must be an object', { sqlstate: '22004' });
      }
      const key = textArg(record.key, 'key');
      const hold = key === null ? undefined : findHold(pool, key);
      const values = [
        key,
        textArg(record.provider, 'provider'),
        textArg(record.providerSandboxId, 'providerSandboxId'),
        textArg(record.threadId, 'threadId'),
        textArg(record.latestSnapshotId, 'latestSnapshotId'),
        textArg(record.latestRunId, 'latestRunId'),
        record.updatedAt === undefined || record.updatedAt === null
          ? null
          : timestamptzLiteral(record.updatedAt, 'updatedAt'),
        hold?.fence ?? null,
      ];
      if (values[6] === null) {
        throw new InvalidArgumentError('updatedAt must not be null', { sqlstate: '22004' });
      }
      await run(key, UPSERT_SQL, values);
    },

    async delete(key: string): Promise<void> {
      if (typeof key === 'string' && !storableKey(key)) return;
      const hold = findHold(pool, key);
      await run(key, DELETE_SQL, [textArg(key, 'key'), hold?.fence ?? null]);
    },

    async list(threadId: string): Promise<SandboxInstanceRecord[]> {
      const result = await run<RecordRow>(null, LIST_SQL, [textArg(threadId, 'threadId')]);
      return result.rows.map(recordFromRow);
    },
  };
}
