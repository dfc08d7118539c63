/**
 * sandbox-store-client: the sandbox_store PostgreSQL extension as a durable
 * sandbox instance store, a per-key lock store and a sandbox checkpoint
 * store for TanStack AI sandbox servers, on node-postgres.
 *
 * ```ts
 * const pool = new pg.Pool()
 * const instances = createInstanceStore(pool)
 * const locks = createLockStore(pool, { mode: 'lease', lockKey: tanstackSandboxKey })
 * const checkpoints = createCheckpointStore(pool) // TanStack AI main's SandboxCheckpointStore
 * // @tanstack/ai-sandbox 0.2.x: the stores are capabilities (see sandbox-store-client/tanstack)
 * const middleware = withDurableSandbox(sandbox, { instances, locks })
 * // @tanstack/ai 0.58: durable runs and resumable streams (extension 1.5)
 * const runs = createRunStore(pool)
 * const adapter = createStreamDurability(pool, request)
 * const driver = createRunDriver(pool) // { claim, pipe } of RunDriverOptions
 * ```
 */
export type {
  ForkCapableSandboxCheckpointStore,
  LockMode,
  LockStore,
  SandboxCheckpoint,
  SandboxCheckpointErrorCode,
  SandboxCheckpointForkCapability,
  SandboxCheckpointForkInput,
  SandboxCheckpointStore,
  SandboxCheckpointStoreOptions,
  SandboxCheckpointWriter,
  SandboxCheckpointWriterLease,
  SandboxInstanceRecord,
  SandboxInstanceStore,
  SandboxRecord,
  SandboxSnapshotArtifact,
  SandboxSnapshotDirectoryEntry,
  SandboxSnapshotEntry,
  SandboxSnapshotFileEntry,
  SandboxStore,
} from './types.js';
export { createInstanceStore, type InstanceStoreOptions, type PgSandboxInstanceStore } from './instance-store.js';
export {
  DEFAULT_CHECKPOINT_LEASE_MS,
  DEFAULT_CHECKPOINT_RENEW_AFTER_MS,
  createCheckpointStore,
  type CheckpointStoreOptions,
  type PgSandboxCheckpointStore,
} from './checkpoint-store.js';
export {
  DEFAULT_LEASE_MS,
  createLockStore,
  tanstackSandboxKey,
  type LockStoreOptions,
  type PgLockStore,
  type WithLockOptions,
} from './lock-store.js';
export {
  ensureSandbox,
  type EnsureContext,
  type EnsureOutcome,
  type EnsureSandboxOptions,
  type EnsureSandboxResult,
  type ProvisionedSandbox,
} from './ensure.js';
export {
  ClaimLostError,
  ConnectionUnavailableError,
  DeadlockError,
  InvalidArgumentError,
  InvalidLogOffsetError,
  LockLostError,
  LockNotAvailableError,
  RunFinishedError,
  RunNotFoundError,
  SandboxCheckpointConflictError,
  SandboxCheckpointDuplicateIdError,
  SandboxCheckpointError,
  SandboxCheckpointInvalidEntryError,
  SandboxCheckpointInvalidIdError,
  SandboxCheckpointNotHeadError,
  SandboxCheckpointParentMismatchError,
  SandboxCheckpointWriterConflictError,
  SandboxCheckpointWriterLostError,
  SandboxStoreError,
  type SandboxStoreErrorOptions,
} from './errors.js';
export type { BackgroundErrorHandler } from './internal/pool.js';
export {
  isRunStatus,
  isTerminalRunStatus,
  type RunClaim,
  type RunCreateInput,
  type RunError,
  type RunLogEntry,
  type RunRecord,
  type RunRecordPatch,
  type RunStatus,
  type RunStore,
  type RunUsage,
  type StreamDurability,
  type TerminalRunStatus,
  type UpsertableStreamDurability,
} from './run-types.js';
export { createRunStore, type PgRunStore, type RunStoreOptions } from './run-store.js';
export {
  DEFAULT_FIRST_CHUNK_DEADLINE_MS,
  createStreamDurability,
  type PgStreamDurability,
  type RequestLike,
  type StreamDurabilityInit,
  type StreamDurabilityOptions,
} from './stream-durability.js';
export {
  createRunDriver,
  type PgRunDriver,
  type RunClaimInput,
  type RunDriverOptions,
  type RunPipeInput,
} from './run-driver.js';
export { continueAfterLog, resumeOf, type RunResume } from './run-continue.js';
