/**
 * Compile-time only (checked by tsc, never run): the stores fit the TanStack
 * AI interfaces as that library declares them, spelled out here so that the
 * package does not depend on it.
 */
import type pg from 'pg';

import {
  createCheckpointStore,
  createInstanceStore,
  createLockStore,
  type PgSandboxCheckpointStore,
  type SandboxCheckpointError,
  type SandboxCheckpointErrorCode,
} from '../src/index.js';

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

/*
 * TanStack AI main's SandboxCheckpointStore (packages/ai-sandbox/src/
 * checkpoint-store.ts), spelled out with the real ModelMessage of
 * @tanstack/ai: the checkpoint store fits it as created, without a type
 * argument, and with ModelMessage as one.
 */
type TanstackModelMessage = import('@tanstack/ai').ModelMessage;
interface TanstackSnapshotFileEntry {
  path: string;
  kind: 'file';
  blobKey: string;
  size: number;
}
interface TanstackSnapshotDirectoryEntry {
  path: string;
  kind: 'dir';
}
interface TanstackSandboxCheckpoint {
  id: string;
  threadId: string;
  parentCheckpointId: string | null;
  createdAt: number;
  reason: 'automatic' | 'named' | 'fork-root';
  label?: string;
  sourceRunId?: string;
  files: ReadonlyArray<TanstackSnapshotFileEntry | TanstackSnapshotDirectoryEntry>;
  conversation: ReadonlyArray<TanstackModelMessage>;
  artifacts: ReadonlyArray<{
    artifactId: string;
    name: string;
    mimeType: string;
    size: number;
    blobKey: string;
    createdAt: number;
  }>;
}
interface TanstackCheckpointWriter {
  threadId: string;
  ownerToken: string;
  fence: number;
}
interface TanstackCheckpointWriterLease extends TanstackCheckpointWriter {
  expiresAt: number;
  renewAfterMs: number;
  renew: () => Promise<{ expiresAt: number }>;
  release: () => Promise<void>;
}
interface TanstackForkInput {
  sourceThreadId: string;
  sourceCheckpointId: string;
  destinationThreadId: string;
  destinationCheckpointId: string;
  createdAt: number;
  writer: TanstackCheckpointWriter;
}
interface TanstackForkCapability {
  forkFromCheckpoint: (input: TanstackForkInput) => Promise<{ checkpoint: TanstackSandboxCheckpoint }>;
}
interface TanstackSandboxCheckpointStore {
  get: (id: string) => Promise<TanstackSandboxCheckpoint | null>;
  list: (threadId: string) => Promise<Array<TanstackSandboxCheckpoint>>;
  getHead: (threadId: string) => Promise<string | null>;
  append: (input: {
    checkpoint: TanstackSandboxCheckpoint;
    expectedHeadId: string | null;
    writer: TanstackCheckpointWriter;
  }) => Promise<{ headId: string }>;
  deleteHead: (input: { threadId: string; checkpointId: string; writer: TanstackCheckpointWriter }) => Promise<void>;
  acquireWriter: (threadId: string) => Promise<TanstackCheckpointWriterLease>;
  listBlobReferences: () => Promise<Array<{ key: string; references: number }>>;
  forkFromCheckpoint?: TanstackForkCapability['forkFromCheckpoint'];
}
type TanstackForkCapableStore = TanstackSandboxCheckpointStore & TanstackForkCapability;
type TanstackCheckpointErrorCode =
  | 'SANDBOX_SNAPSHOT_STALE_HEAD'
  | 'SANDBOX_SNAPSHOT_PARENT_MISMATCH'
  | 'SANDBOX_SNAPSHOT_DUPLICATE_ID'
  | 'SANDBOX_SNAPSHOT_NOT_HEAD'
  | 'SANDBOX_SNAPSHOT_WRITER_CONFLICT'
  | 'SANDBOX_SNAPSHOT_WRITER_LOST'
  | 'SANDBOX_SNAPSHOT_INVALID_ID'
  | 'SANDBOX_SNAPSHOT_INVALID_ENTRY'
  | 'SANDBOX_SNAPSHOT_CHECKPOINT_NOT_FOUND'
  | 'SANDBOX_SNAPSHOT_ATOMIC_FORK_REQUIRED'
  | 'SANDBOX_SNAPSHOT_FORK_SOURCE_NOT_FOUND'
  | 'SANDBOX_SNAPSHOT_FORK_SOURCE_THREAD_MISMATCH'
  | 'SANDBOX_SNAPSHOT_FORK_DESTINATION_NOT_EMPTY';

export function wireCheckpoints(pool: pg.Pool): TanstackForkCapableStore[] {
  // As created (what an app swapping the in-memory store writes), and typed.
  const plain: TanstackSandboxCheckpointStore = createCheckpointStore(pool);
  // Created first and handed over later (no contextual type to infer from).
  const untyped = createCheckpointStore(pool);
  const later: TanstackForkCapableStore = untyped;
  const forkable: TanstackForkCapableStore = createCheckpointStore(pool, { leaseDurationMs: 60_000 });
  const typed: TanstackForkCapableStore = createCheckpointStore<TanstackModelMessage>(pool);
  // The store's own declarations are TanStack's: both ways.
  const declared: PgSandboxCheckpointStore<TanstackModelMessage> = forkable;
  const asUpstream: TanstackForkCapableStore = declared;
  void plain;
  void later;
  return [forkable, typed, asUpstream];
}

/** An app's error handling: `code` is TanStack's union, exactly. */
export function codeOf(error: SandboxCheckpointError): TanstackCheckpointErrorCode {
  const code: TanstackCheckpointErrorCode = error.code;
  const back: SandboxCheckpointErrorCode = code;
  return back;
}
