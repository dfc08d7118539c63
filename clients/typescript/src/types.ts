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
