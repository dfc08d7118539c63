/**
 * Typed errors.  Every error this package raises for a database answer
 * carries the SQLSTATE as `sqlstate` (and, like node-postgres' own errors,
 * as `code`), with the driver's error as `cause`.
 *
 * | class                   | SQLSTATE                          | meaning                                          |
 * |-------------------------|-----------------------------------|--------------------------------------------------|
 * | `InvalidArgumentError`  | 22004, 22023, 22001, 22007, 22008 | a NULL, empty, too long or out-of-range argument |
 * | `LockNotAvailableError` | 55P03                             | the key was not obtained within `waitMs`         |
 * | `LockLostError`         | of the cause, if any              | ownership can no longer be guaranteed            |
 * | `ClaimLostError`        | SB001                             | the lease-mode claim was released or taken over  |
 *
 * | `RunNotFoundError`      | SBR01                             | `run_claim` of a run that does not exist         |
 * | `RunFinishedError`      | SBR02                             | the run is finished, or its log is closed        |
 * | `InvalidLogOffsetError` | SBR03                             | an upsert's offset is not one this log can take  |
 * | `DeadlockError`         | 40P01                             | the wait would close a cycle of waits            |
 * | `ConnectionUnavailableError` | none                         | no pool connection within `connectTimeoutMs`     |
 * | `SandboxStoreError`     | any other, or none                | everything else the database or driver raised    |
 *
 * The checkpoint store's errors are `SandboxCheckpointError`s (and its
 * subclasses, named as in TanStack AI): their `code` is TanStack AI's
 * `SANDBOX_SNAPSHOT_*` code, so an app's error handling works unchanged;
 * the SQLSTATE (SBC01..SBC10, SB001) is on `sqlstate` only.
 *
 * `ClaimLostError` is a `LockLostError`: catch the latter for "lost the key".
 * A database error of any other SQLSTATE is a plain `SandboxStoreError` with
 * that `sqlstate`; the driver's error is its `cause`.  Cancellation by the
 * caller's `AbortSignal` rejects with the signal's reason, as `fetch` does.
 */

import type { SandboxCheckpointErrorCode } from './types.js';

export interface SandboxStoreErrorOptions {
  sqlstate?: string | undefined;
  cause?: unknown;
}

/** Base class of every error this package raises. */
export class SandboxStoreError extends Error {
  override name = 'SandboxStoreError';
  /** The SQLSTATE of the database error (or of the check that stood in for it). */
  readonly sqlstate: string | undefined;
  /** Same as `sqlstate`, the property name node-postgres uses. */
  readonly code: string | undefined;

  constructor(message: string, options: SandboxStoreErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.sqlstate = options.sqlstate;
    this.code = options.sqlstate;
  }
}

/**
 * A required argument was NULL (22004), a value was empty or out of range
 * (22023, 22007, 22008), or text was over 1024 bytes (22001).
 */
export class InvalidArgumentError extends SandboxStoreError {
  override name = 'InvalidArgumentError';
}

/** The key's lock (or a live claim on it) was not obtained within `waitMs` (55P03). */
export class LockNotAvailableError extends SandboxStoreError {
  override name = 'LockNotAvailableError';
}

/**
 * Ownership of the key can no longer be guaranteed: the lock's connection
 * died (lock mode), or the lease could not be renewed in time (lease mode).
 * Used as the `AbortSignal` reason.
 */
export class LockLostError extends SandboxStoreError {
  override name = 'LockLostError';
}

/**
 * SB001: the claim was released or taken over, so a fenced write (or a
 * renewal) was refused and nothing changed.
 */
export class ClaimLostError extends LockLostError {
  override name = 'ClaimLostError';
}

/** SBR01: a run driver's claim names a run that has no record (`run_claim`). */
export class RunNotFoundError extends SandboxStoreError {
  override name = 'RunNotFoundError';
}

/**
 * SBR02: the run's status is terminal (a claim, an append or an upsert), or
 * its log is closed (an append or an upsert).  Nothing was changed.
 */
export class RunFinishedError extends SandboxStoreError {
  override name = 'RunFinishedError';
}

/**
 * SBR03: an offset given to a run log's `upsert` is not one it can take:
 * repeated in the batch, minted for another run or by another adapter, or a
 * new offset that is not after the tail and every preceding new entry.  The
 * whole batch was refused; nothing was changed.
 */
export class InvalidLogOffsetError extends SandboxStoreError {
  override name = 'InvalidLogOffsetError';
}

/** A wait for keys would close a cycle (in this process, or PostgreSQL's 40P01). */
export class DeadlockError extends SandboxStoreError {
  override name = 'DeadlockError';
}

/**
 * No connection of the pool became free within `connectTimeoutMs` (every
 * one is held, e.g. by sections of other keys), so the call gave up instead
 * of waiting without bound.
 */
export class ConnectionUnavailableError extends SandboxStoreError {
  override name = 'ConnectionUnavailableError';
}

/**
 * A checkpoint store error, with TanStack AI's code as `code` (not the
 * SQLSTATE: that is `sqlstate`, e.g. SBC01 for a stale head).
 */
export class SandboxCheckpointError extends SandboxStoreError {
  override name = 'SandboxCheckpointError';
  /** TanStack AI's code. */
  override readonly code: SandboxCheckpointErrorCode;

  constructor(code: SandboxCheckpointErrorCode, message: string, options: SandboxStoreErrorOptions = {}) {
    super(message, options);
    this.code = code;
  }
}

/** SBC01: the thread's head is not `expectedHeadId` (`SANDBOX_SNAPSHOT_STALE_HEAD`). */
export class SandboxCheckpointConflictError extends SandboxCheckpointError {
  override name = 'SandboxCheckpointConflictError';
  constructor(message: string, options: SandboxStoreErrorOptions = {}) {
    super('SANDBOX_SNAPSHOT_STALE_HEAD', message, options);
  }
}

/** SBC02: the checkpoint's parent is not `expectedHeadId` (`SANDBOX_SNAPSHOT_PARENT_MISMATCH`). */
export class SandboxCheckpointParentMismatchError extends SandboxCheckpointError {
  override name = 'SandboxCheckpointParentMismatchError';
  constructor(message: string, options: SandboxStoreErrorOptions = {}) {
    super('SANDBOX_SNAPSHOT_PARENT_MISMATCH', message, options);
  }
}

/** SBC03: a checkpoint with this id exists, in any thread (`SANDBOX_SNAPSHOT_DUPLICATE_ID`). */
export class SandboxCheckpointDuplicateIdError extends SandboxCheckpointError {
  override name = 'SandboxCheckpointDuplicateIdError';
  constructor(message: string, options: SandboxStoreErrorOptions = {}) {
    super('SANDBOX_SNAPSHOT_DUPLICATE_ID', message, options);
  }
}

/** SBC04: `deleteHead` of a checkpoint that is not the thread's head (`SANDBOX_SNAPSHOT_NOT_HEAD`). */
export class SandboxCheckpointNotHeadError extends SandboxCheckpointError {
  override name = 'SandboxCheckpointNotHeadError';
  constructor(message: string, options: SandboxStoreErrorOptions = {}) {
    super('SANDBOX_SNAPSHOT_NOT_HEAD', message, options);
  }
}

/** SBC05: another unexpired writer holds the thread (`SANDBOX_SNAPSHOT_WRITER_CONFLICT`). */
export class SandboxCheckpointWriterConflictError extends SandboxCheckpointError {
  override name = 'SandboxCheckpointWriterConflictError';
  constructor(message: string, options: SandboxStoreErrorOptions = {}) {
    super('SANDBOX_SNAPSHOT_WRITER_CONFLICT', message, options);
  }
}

/**
 * SB001: the writer is not the thread's current, unexpired writer (released,
 * expired, taken over, of another thread, or never issued); nothing changed
 * (`SANDBOX_SNAPSHOT_WRITER_LOST`).
 */
export class SandboxCheckpointWriterLostError extends SandboxCheckpointError {
  override name = 'SandboxCheckpointWriterLostError';
  constructor(message: string, options: SandboxStoreErrorOptions = {}) {
    super('SANDBOX_SNAPSHOT_WRITER_LOST', message, options);
  }
}

/** SBC07: an id that is empty, too long, not well-formed Unicode or holds U+0000 (`SANDBOX_SNAPSHOT_INVALID_ID`). */
export class SandboxCheckpointInvalidIdError extends SandboxCheckpointError {
  override name = 'SandboxCheckpointInvalidIdError';
  constructor(message: string, options: SandboxStoreErrorOptions = {}) {
    super('SANDBOX_SNAPSHOT_INVALID_ID', message, options);
  }
}

/** SBC08: a field or entry of the checkpoint is not as the contract says (`SANDBOX_SNAPSHOT_INVALID_ENTRY`). */
export class SandboxCheckpointInvalidEntryError extends SandboxCheckpointError {
  override name = 'SandboxCheckpointInvalidEntryError';
  constructor(message: string, options: SandboxStoreErrorOptions = {}) {
    super('SANDBOX_SNAPSHOT_INVALID_ENTRY', message, options);
  }
}

const INVALID_ARGUMENT = new Set(['22004', '22023', '22001', '22007', '22008', '22021', '22P05']);

/**
 * What a 42501 (insufficient_privilege) adds to the server's message: the
 * README's two GRANT lines, which the app role needs and nothing more.
 */
const GRANT_HINT =
  'The role the pool connects as needs these two grants (run them as the extension owner, with that role for app): ' +
  'GRANT USAGE ON SCHEMA sandbox_store TO app; GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA sandbox_store TO app;';

/**
 * What a missing schema (3F000) or function (42883) of sandbox_store adds to
 * the server's message: the extension is not in the database the pool
 * connects to (or, for a function, it is older than the call needs).
 */
const NOT_INSTALLED_HINT =
  'The sandbox_store extension is not installed in the database the pool connects to: ' +
  'run CREATE EXTENSION sandbox_store; there as a superuser (the C edition), or on a managed database ' +
  "the SQL edition's script (sandbox_store-<version>-pg_tle.sql then CREATE EXTENSION sandbox_store;, " +
  'or sandbox_store-<version>.sql), as the README says.';
const RUNS_VERSION_HINT =
  'The run functions (run_* and run_log_*) need sandbox_store 1.5 or later in the database the pool connects to: ' +
  'ALTER EXTENSION sandbox_store UPDATE; (or CREATE EXTENSION sandbox_store; if it is not installed at all).';
const OLD_VERSION_HINT =
  'Either the sandbox_store extension is not installed in the database the pool connects to ' +
  "(CREATE EXTENSION sandbox_store; as a superuser, or on a managed database the SQL edition's script), " +
  'or it is older than this call needs (ALTER EXTENSION sandbox_store UPDATE;).';

/** SQLSTATE of an error from node-postgres, if it has one. */
export function sqlstateOf(error: unknown): string | undefined {
  if (typeof error === 'object' && error !== null && 'code' in error) {
    const code = (error as { code: unknown }).code;
    if (typeof code === 'string') return code;
  }
  return undefined;
}

/** Map a driver error to the typed error for its SQLSTATE (a SandboxStoreError whatever it is). */
export function toStoreError(error: unknown): SandboxStoreError {
  if (error instanceof SandboxStoreError) return error;
  const sqlstate = sqlstateOf(error);
  const message = error instanceof Error ? error.message : String(error);
  const options = { sqlstate, cause: error };
  if (sqlstate === 'SB001') return new ClaimLostError(message, options);
  if (sqlstate === '55P03') return new LockNotAvailableError(message, options);
  if (sqlstate === '40P01') return new DeadlockError(message, options);
  if (sqlstate === 'SBR01') return new RunNotFoundError(message, options);
  if (sqlstate === 'SBR02') return new RunFinishedError(message, options);
  if (sqlstate === 'SBR03') return new InvalidLogOffsetError(message, options);
  if (sqlstate !== undefined && INVALID_ARGUMENT.has(sqlstate)) return new InvalidArgumentError(message, options);
  if (sqlstate === '42501') return new SandboxStoreError(`${message}. ${GRANT_HINT}`, options);
  if (sqlstate === '3F000' && message.includes('"sandbox_store"')) {
    return new SandboxStoreError(`${message}. ${NOT_INSTALLED_HINT}`, options);
  }
  if (sqlstate === '42883' && message.includes('sandbox_store.run_')) {
    return new SandboxStoreError(`${message}. ${RUNS_VERSION_HINT}`, options);
  }
  if (sqlstate === '42883' && message.includes('sandbox_store.')) {
    return new SandboxStoreError(`${message}. ${OLD_VERSION_HINT}`, options);
  }
  return new SandboxStoreError(message, options);
}

/**
 * Whether an error means the connection itself is gone: connection
 * exceptions (08xxx), an administrator or crash shutdown of the backend
 * (57P01..57P03), or node-postgres' own "Connection terminated" errors.
 */
export function isConnectionError(error: unknown): boolean {
  const sqlstate = sqlstateOf(error);
  if (sqlstate !== undefined) {
    return sqlstate.startsWith('08') || sqlstate === '57P01' || sqlstate === '57P02' || sqlstate === '57P03';
  }
  if (error instanceof Error) {
    return /Connection terminated|not queryable|ECONNRESET|EPIPE|socket/i.test(error.message);
  }
  return false;
}
