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
 * `ClaimLostError` is a `LockLostError`: catch the latter for "lost the key".
 * Errors with any other SQLSTATE are passed through unchanged.
 */

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

const INVALID_ARGUMENT = new Set(['22004', '22023', '22001', '22007', '22008']);

/** SQLSTATE of an error from node-postgres, if it has one. */
export function sqlstateOf(error: unknown): string | undefined {
  if (typeof error === 'object' && error !== null && 'code' in error) {
    const code = (error as { code: unknown }).code;
    if (typeof code === 'string') return code;
  }
  return undefined;
}

/** Map a driver error to the typed error for its SQLSTATE; other errors pass through. */
export function toStoreError(error: unknown): unknown {
  if (error instanceof SandboxStoreError) return error;
  const sqlstate = sqlstateOf(error);
  if (sqlstate === undefined) return error;
  const message = error instanceof Error ? error.message : String(error);
  const options = { sqlstate, cause: error };
  if (sqlstate === 'SB001') return new ClaimLostError(message, options);
  if (sqlstate === '55P03') return new LockNotAvailableError(message, options);
  if (INVALID_ARGUMENT.has(sqlstate)) return new InvalidArgumentError(message, options);
  return error;
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
