/**
 * sandbox-store-client: the sandbox_store PostgreSQL extension as a durable
 * sandbox instance store and a per-key lock store for TanStack AI sandbox
 * servers, on node-postgres.
 *
 * ```ts
 * const pool = new pg.Pool()
 * const instances = createInstanceStore(pool)
 * const locks = createLockStore(pool, { mode: 'lease', lockKey: tanstackSandboxKey })
 * // @tanstack/ai-sandbox 0.2.x: the stores are capabilities (see sandbox-store-client/tanstack)
 * const middleware = withDurableSandbox(sandbox, { instances, locks })
 * ```
 */
export type {
  LockMode,
  LockStore,
  SandboxInstanceRecord,
  SandboxInstanceStore,
  SandboxRecord,
  SandboxStore,
} from './types.js';
export { createInstanceStore, type InstanceStoreOptions, type PgSandboxInstanceStore } from './instance-store.js';
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
  LockLostError,
  LockNotAvailableError,
  SandboxStoreError,
  type SandboxStoreErrorOptions,
} from './errors.js';
export type { BackgroundErrorHandler } from './internal/pool.js';
