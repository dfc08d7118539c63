/**
 * What the run store, the run log adapter and the run driver share: the
 * record and offset conversions, and this process's live driver claims (how
 * one is lost, and their registry); the SQL of the run functions is in
 * sql.ts.
 *
 * Records and chunks come back as jsonb's text, parsed here (whatever type
 * parsers the app installed).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Pool } from 'pg';

import { InvalidLogOffsetError, SandboxStoreError } from '../errors.js';
import { isRunStatus, type RunRecord } from '../run-types.js';

/**
 * A record as the run functions return it (jsonb text), checked: a status
 * that is not a {@link RunStatus} is refused, not handed on (TanStack AI's
 * readers act destructively on a terminal status).
 */
export function runRecordFromText(text: string | null, what: string): RunRecord | null {
  if (text === null) return null;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (cause) {
    throw new SandboxStoreError(`${what} returned a record that is not JSON`, { cause });
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new SandboxStoreError(`${what} returned a record that is not a JSON object`);
  }
  const record = value as Record<string, unknown>;
  if (typeof record['runId'] !== 'string' || typeof record['threadId'] !== 'string') {
    throw new SandboxStoreError(`${what} returned a record without runId or threadId`);
  }
  if (!isRunStatus(record['status'])) {
    throw new SandboxStoreError(
      `${what} returned run "${record['runId']}" with an unrecognized status ${JSON.stringify(record['status'])}`,
    );
  }
  if (typeof record['startedAt'] !== 'number') {
    throw new SandboxStoreError(`${what} returned run "${record['runId']}" without a numeric startedAt`);
  }
  return record as unknown as RunRecord;
}

/** An int8 of the database (as text) as a JS number. */
export function seqNumber(text: string): number {
  const n = Number(text);
  if (!Number.isSafeInteger(n))
    throw new SandboxStoreError(`sandbox_store returned a log position out of range: ${text}`);
  return n;
}

/*
 * Offsets: `pg1:<encodeURIComponent(runId)>:<seq>`, naming their run; `-1`
 * (from the start) and `now` (from the tail) are memoryStream's.
 */
const OFFSET_PREFIX = 'pg1:';

export function encodeOffset(runId: string, seq: number): string {
  return `${OFFSET_PREFIX}${encodeURIComponent(runId)}:${seq}`;
}

/** The run and position of an offset this package minted; InvalidLogOffsetError (SBR03) otherwise. */
export function decodeOffset(offset: unknown): { runId: string; seq: number } {
  const fail = (): never => {
    throw new InvalidLogOffsetError(
      `invalid log offset ${JSON.stringify(offset)}: not an offset of a sandbox_store run log`,
      {
        sqlstate: 'SBR03',
      },
    );
  };
  if (typeof offset !== 'string' || !offset.startsWith(OFFSET_PREFIX)) return fail();
  const rest = offset.slice(OFFSET_PREFIX.length);
  const colon = rest.lastIndexOf(':');
  if (colon <= 0) return fail();
  const digits = rest.slice(colon + 1);
  if (!/^[1-9][0-9]{0,15}$/.test(digits)) return fail();
  const seq = Number(digits);
  if (!Number.isSafeInteger(seq)) return fail();
  let runId: string;
  try {
    runId = decodeURIComponent(rest.slice(0, colon));
  } catch {
    return fail();
  }
  // Only the canonical spelling is one this package minted.
  if (encodeOffset(runId, seq) !== offset) return fail();
  return { runId, seq };
}

/*
 * A claim of a run driver of this package, and how it is lost: its signal
 * aborts through `lose` and nothing else, whatever told (the lock or lease
 * lost, the epoch check, a write under its epoch refused with SB001).  Who
 * makes a fenced write for a claim hands the adapter (or catches for
 * itself) the claim's `lose`.
 *
 * The registry of this process's live driver claims, per pool and run, is
 * for the writes made without one in hand: the run store passes a claim's
 * epoch with its updates, and an update, or a write of an adapter made with
 * `createStreamDurability(..., { epoch })`, refused with SB001 loses the
 * claim it was made under.  Entries exist only while a claim's `fn` runs.
 * Inside a claim's call chain its own claim is found first (an
 * AsyncLocalStorage context), so that a host's updates carry its own epoch
 * even if a later claim of the run lives in the process.
 */

/** A live claim of a run driver of this package. */
export interface LiveClaim {
  readonly runId: string;
  readonly epoch: number;
  /** Aborts when the claim is lost (with the first reason given to `lose`). */
  readonly signal: AbortSignal;
  /** The claim is lost: its signal aborts with `reason` (a no-op once it was lost). */
  readonly lose: (reason: unknown) => void;
}

/** A claim of `runId` under `epoch`, not lost yet. */
export function newClaim(runId: string, epoch: number): LiveClaim {
  const controller = new AbortController();
  const lose = (reason: unknown): void => {
    if (!controller.signal.aborted) controller.abort(reason);
  };
  return { runId, epoch, signal: controller.signal, lose };
}

const claimsByPool = new WeakMap<Pool, Map<string, LiveClaim>>();

export function registerClaim(pool: Pool, claim: LiveClaim): () => void {
  let claims = claimsByPool.get(pool);
  if (claims === undefined) {
    claims = new Map();
    claimsByPool.set(pool, claims);
  }
  const previous = claims.get(claim.runId);
  claims.set(claim.runId, claim);
  return () => {
    const current = claimsByPool.get(pool);
    if (current?.get(claim.runId) !== claim) return;
    if (previous !== undefined && !previous.signal.aborted) current.set(claim.runId, previous);
    else current.delete(claim.runId);
    if (current.size === 0) claimsByPool.delete(pool);
  };
}

const claimChain = new AsyncLocalStorage<ReadonlyArray<{ pool: Pool; claim: LiveClaim }>>();

/** Run `fn` with `claim` in its call chain's context. */
export function runInClaim<T>(pool: Pool, claim: LiveClaim, fn: () => Promise<T>): Promise<T> {
  return claimChain.run([...(claimChain.getStore() ?? []), { pool, claim }], fn);
}

/** The live claim this process holds on `runId` over `pool` (the call chain's own first), if any. */
export function liveClaim(pool: Pool, runId: string): LiveClaim | undefined {
  const chain = claimChain.getStore() ?? [];
  for (let i = chain.length - 1; i >= 0; i--) {
    const entry = chain[i];
    if (entry !== undefined && entry.pool === pool && entry.claim.runId === runId) return entry.claim;
  }
  return claimsByPool.get(pool)?.get(runId);
}

/**
 * A write under `epoch` of `runId` was refused with SB001: this process's
 * live claim of that run and epoch, if any, is lost.
 */
export function loseLiveClaim(pool: Pool, runId: string, epoch: number, error: unknown): void {
  const claim = liveClaim(pool, runId);
  if (claim !== undefined && claim.epoch === epoch) claim.lose(error);
}
