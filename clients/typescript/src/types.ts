/**
 * The TanStack AI sandbox contracts, declared structurally, so that this
 * package depends on no TanStack package: @tanstack/ai-sandbox 0.2.x names
 * them `SandboxStore`, `SandboxRecord` and `LockStore`; TanStack AI's main
 * branch `SandboxInstanceStore`, `SandboxInstanceRecord` and `LockStore`.
 * Both spellings are exported; they are the same types.
 */

/** One persisted sandbox instance, keyed by the compound sandbox instance key. */
export interface SandboxInstanceRecord {
  /** Compound key (thread, sandbox definition, provider, workspace, tenant); 1..1024 bytes. */
  key: string;
  /** Provider name that owns `providerSandboxId`. */
  provider: string;
  /** Provider-assigned sandbox id used to resume. */
  providerSandboxId: string;
  /** Most recent snapshot id, when the provider supports snapshots. Absent, never `null`. */
  latestSnapshotId?: string;
  threadId: string;
  /** The last run that used the sandbox. Absent, never `null`. */
  latestRunId?: string;
  /** Epoch milliseconds of the last write. */
  updatedAt: number;
}

/** Maps a compound key to the provider sandbox that should be resumed. */
export interface SandboxInstanceStore {
  /** The record of `key`, or `null` if there is none (never throws for a missing key). */
  get: (key: string) => Promise<SandboxInstanceRecord | null>;
  /** Insert or fully replace the record of `record.key` (omitted optional fields clear what was stored). */
  upsert: (record: SandboxInstanceRecord) => Promise<void>;
  /** Remove the record of `key`; a missing key is a no-op. */
  delete: (key: string) => Promise<void>;
}

/** @tanstack/ai-sandbox 0.2.x's name of {@link SandboxInstanceRecord}. */
export type SandboxRecord = SandboxInstanceRecord;

/** @tanstack/ai-sandbox 0.2.x's name of {@link SandboxInstanceStore}. */
export type SandboxStore = SandboxInstanceStore;

/** Mutual exclusion per key; `signal` aborts when ownership can no longer be guaranteed. */
export interface LockStore {
  withLock: <T>(key: string, fn: (signal: AbortSignal) => Promise<T>) => Promise<T>;
}

/** How the key is held. */
export type LockMode = 'lock' | 'lease';

/*
 * Sandbox checkpoints: TanStack AI main's `SandboxCheckpointStore` and the
 * types around it (@tanstack/ai-sandbox 0.2.x has none), with its names.
 * The messages of a checkpoint's conversation are `TMessage`, `any` unless
 * given: TanStack AI's are its `ModelMessage`, which this package does not
 * import; with `any` a store of this package fits TanStack's interface
 * as it is.  Pass `ModelMessage` (or your own type) for strict typing.
 */

/** A file of a checkpoint: its content is the blob `blobKey` (`sandbox-files/sha256/<64 hex>`). */
export interface SandboxSnapshotFileEntry {
  /** Normalized relative path (no leading `/`, no `.` or `..` parts, no `\`). */
  path: string;
  kind: 'file';
  blobKey: string;
  /** Bytes. */
  size: number;
}

/** A directory of a checkpoint. */
export interface SandboxSnapshotDirectoryEntry {
  path: string;
  kind: 'dir';
}

export type SandboxSnapshotEntry = SandboxSnapshotFileEntry | SandboxSnapshotDirectoryEntry;

/** An artifact kept with a checkpoint; its bytes are the blob `blobKey` (under `sandbox-artifacts/`). */
export interface SandboxSnapshotArtifact {
  artifactId: string;
  name: string;
  mimeType: string;
  size: number;
  blobKey: string;
  /** Epoch milliseconds. */
  createdAt: number;
}

/** One saved state of a thread's sandbox and conversation; immutable once appended. */
// biome-ignore lint/suspicious/noExplicitAny: the default keeps the store assignable to TanStack AI's interface (ModelMessage) without importing it
export interface SandboxCheckpoint<TMessage = any> {
  /** Unique across all threads; 1..1024 bytes of well-formed Unicode. */
  id: string;
  /** 1..1000 bytes of well-formed Unicode. */
  threadId: string;
  /** The checkpoint this one follows (the head it was appended on), `null` for a root. */
  parentCheckpointId: string | null;
  /** Epoch milliseconds, a whole number. */
  createdAt: number;
  reason: 'automatic' | 'named' | 'fork-root';
  label?: string;
  sourceRunId?: string;
  files: ReadonlyArray<SandboxSnapshotEntry>;
  /** The model messages, as JSON. */
  conversation: ReadonlyArray<TMessage>;
  artifacts: ReadonlyArray<SandboxSnapshotArtifact>;
}

/** What proves a write comes from the thread's current writer. */
export interface SandboxCheckpointWriter {
  threadId: string;
  ownerToken: string;
  fence: number;
}

/** The thread's writer, as `acquireWriter` returns it. */
export interface SandboxCheckpointWriterLease extends SandboxCheckpointWriter {
  /** Epoch milliseconds when the lease ends unless renewed (updated by `renew`). */
  expiresAt: number;
  /** How often the holder should renew. */
  renewAfterMs: number;
  /** Extend the lease while it is still the thread's current one; `SANDBOX_SNAPSHOT_WRITER_LOST` otherwise. */
  renew: () => Promise<{ expiresAt: number }>;
  /** End the lease if it is still the current one (a stale lease never ends its successor). */
  release: () => Promise<void>;
}

/** Input of `forkFromCheckpoint`. */
export interface SandboxCheckpointForkInput {
  sourceThreadId: string;
  sourceCheckpointId: string;
  destinationThreadId: string;
  destinationCheckpointId: string;
  createdAt: number;
  /** The destination thread's writer. */
  writer: SandboxCheckpointWriter;
}

// biome-ignore lint/suspicious/noExplicitAny: see SandboxCheckpoint
export interface SandboxCheckpointForkCapability<TMessage = any> {
  forkFromCheckpoint: (input: SandboxCheckpointForkInput) => Promise<{ checkpoint: SandboxCheckpoint<TMessage> }>;
}

/** The checkpoint chain of each thread, its head, its single writer and the blob references. */
// biome-ignore lint/suspicious/noExplicitAny: see SandboxCheckpoint
export interface SandboxCheckpointStore<TMessage = any> {
  get: (id: string) => Promise<SandboxCheckpoint<TMessage> | null>;
  list: (threadId: string) => Promise<Array<SandboxCheckpoint<TMessage>>>;
  getHead: (threadId: string) => Promise<string | null>;
  append: (input: {
    checkpoint: SandboxCheckpoint<TMessage>;
    expectedHeadId: string | null;
    writer: SandboxCheckpointWriter;
  }) => Promise<{ headId: string }>;
  deleteHead: (input: { threadId: string; checkpointId: string; writer: SandboxCheckpointWriter }) => Promise<void>;
  acquireWriter: (threadId: string) => Promise<SandboxCheckpointWriterLease>;
  listBlobReferences: () => Promise<Array<{ key: string; references: number }>>;
  /** Optional in the interface; this package's store has it. */
  forkFromCheckpoint?: SandboxCheckpointForkCapability<TMessage>['forkFromCheckpoint'];
}

// biome-ignore lint/suspicious/noExplicitAny: see SandboxCheckpoint
export type ForkCapableSandboxCheckpointStore<TMessage = any> = SandboxCheckpointStore<TMessage> &
  SandboxCheckpointForkCapability<TMessage>;

/** The options TanStack AI's checkpoint stores take. */
export interface SandboxCheckpointStoreOptions {
  /** A clock (epoch milliseconds) instead of the database's, for tests. */
  now?: () => number;
  /** How long a writer lease lasts without renewal (default 120 000 ms). */
  leaseDurationMs?: number;
  /** How often a writer should renew (default 45 000 ms; below `leaseDurationMs`). */
  renewAfterMs?: number;
}

/** The `code` of a checkpoint error, as TanStack AI spells it. */
export type SandboxCheckpointErrorCode =
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
