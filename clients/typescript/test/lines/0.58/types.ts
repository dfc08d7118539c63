/**
 * The type test of the 0.58 line (it passes when it compiles): the
 * package's structural types are TanStack AI 0.58's, as a 0.58 app uses
 * them, with the package's strict compiler options.
 */
import {
  InMemoryRunStore,
  type RunDriverOptions,
  type RunRecord as TanStackRunRecord,
  type RunStore as TanStackRunStore,
  type StreamChunk,
  type StreamDurability as TanStackStreamDurability,
  type UpsertableStreamDurability as TanStackUpsertableStreamDurability,
} from '@tanstack/ai';
import { type LockStore as TanStackLockStore, withLocks } from '@tanstack/ai/locks';

import {
  createLockStore,
  createRunDriver,
  createRunStore,
  createStreamDurability,
  type RunRecord,
  type RunStore,
  type UpsertableStreamDurability,
} from '../../../src/index.js';
import type { newPool } from '../../helpers.js';

declare const pool: ReturnType<typeof newPool>;
declare const request: Request;
declare const drive: RunDriverOptions['drive'];

// The run store is a RunStore of 0.58 (every optional method present); the records are the same type.
const runs: TanStackRunStore = createRunStore(pool);
export const listByThread: NonNullable<TanStackRunStore['listByThread']> = createRunStore(pool).listByThread;
export const reads: Pick<RunStore, 'get' | 'findActiveRun'> = new InMemoryRunStore();
export const record: TanStackRunRecord = {} as RunRecord;
export const ours: RunRecord = {} as TanStackRunRecord;

// The adapter is an UpsertableStreamDurability of 0.58, typed chunks or not.
export const adapter: TanStackUpsertableStreamDurability = createStreamDurability(pool, request);
export const plain: TanStackStreamDurability = createStreamDurability(pool, { runId: 'r', offset: '-1' }, { epoch: 1 });
export const typed: UpsertableStreamDurability<string, StreamChunk> = createStreamDurability<StreamChunk>(
  pool,
  request,
);
export const typedTheirs: TanStackUpsertableStreamDurability = typed;

// The lock store fits withLocks and RunDriverOptions' LockStore.
const locks = createLockStore(pool, { mode: 'lease', waitMs: null });
export const lockStore: TanStackLockStore = locks;
export const middleware = withLocks(locks);

// claim and pipe are RunDriverOptions' own.
export const driver: RunDriverOptions = { request, runs, locks, drive, ...createRunDriver(pool) };
export const pair: Pick<RunDriverOptions, 'claim' | 'pipe'> = createRunDriver(pool, { batch: 16 });
