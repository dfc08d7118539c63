/**
 * Compile-time only (checked by tsc, never run): the stores fit the TanStack
 * AI interfaces as that library declares them, spelled out here so that the
 * package does not depend on it.
 */
import type pg from 'pg';

import { createInstanceStore, createLockStore } from '../src/index.js';

interface TanstackSandboxInstanceRecord {
  key: string;
  provider: string;
  providerSandboxId: string;
  latestSnapshotId?: string;
  threadId: string;
  latestRunId?: string;
  updatedAt: number;
}
interface TanstackSandboxInstanceStore {
  get: (key: string) => Promise<TanstackSandboxInstanceRecord | null>;
  upsert: (record: TanstackSandboxInstanceRecord) => Promise<void>;
  delete: (key: string) => Promise<void>;
}
interface TanstackLockStore {
  withLock: <T>(key: string, fn: (signal: AbortSignal) => Promise<T>) => Promise<T>;
}

export function wire(pool: pg.Pool): { instances: TanstackSandboxInstanceStore; locks: TanstackLockStore } {
  const instances: TanstackSandboxInstanceStore = createInstanceStore(pool);
  const locks: TanstackLockStore = createLockStore(pool, { mode: 'lease' });
  // A callback that ignores the signal is fine too.
  void locks.withLock('k', async () => 1);
  return { instances, locks };
}
