import type { Pool } from 'pg';

import { ClaimLostError, InvalidArgumentError, SandboxStoreError } from './errors.js';
import { connectTimeoutOption, poolQuery } from './internal/pool.js';
import { liveClaim, runRecordFromText } from './internal/runs.js';
import {
  RUN_CREATE_SQL,
  RUN_FIND_ACTIVE_SQL,
  RUN_GET_SQL,
  RUN_LIST_BY_THREAD_SQL,
  RUN_LIST_RECLAIMABLE_SQL,
  RUN_UPDATE_SQL,
} from './internal/sql.js';
import type { RunCreateInput, RunRecord, RunRecordPatch, RunStore } from './run-types.js';

export interface RunStoreOptions {
  /** How long a call waits for a connection of the pool (default 30 000 ms). */
  connectTimeoutMs?: number;
}

/** The run store (every method of TanStack AI 0.58's `RunStore`). */
export type PgRunStore = RunStore;

const PATCH_KEYS: ReadonlySet<string> = new Set([
  'status',
  'finishedAt',
  'error',
  'usage',
  'sandboxKey',
  'detachedSince',
  'cancelRequested',
  'driverEpoch',
]);

/**
 * The patch as run_update takes it: a key present with `undefined` becomes
 * JSON null (clear the field), an absent key stays absent (leave it).
 */
function patchJson(patch: RunRecordPatch): string {
  if (typeof patch !== 'object' || patch === null || Array.isArray(patch)) {
    throw new InvalidArgumentError('patch must be an object', { sqlstate: '22023' });
  }
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(patch)) {
    if (!PATCH_KEYS.has(key)) {
      throw new InvalidArgumentError(`patch has a key a run record cannot be patched with: ${JSON.stringify(key)}`, {
        sqlstate: '22023',
      });
    }
    const value = (patch as Record<string, unknown>)[key];
    out[key] = value === undefined ? null : value;
  }
  return JSON.stringify(out);
}

/**
 * TanStack AI 0.58's `RunStore` over the extension's run functions (1.5):
 * one autocommit statement per call.
 *
 * - `createOrResume` inserts, or returns the stored record unchanged (a
 *   finished run stays finished; the other arguments are ignored).
 * - `update(runId, patch)`: a key present sets the field, a key present with
 *   `undefined` clears it, an absent key leaves it; an unknown run is a
 *   no-op.  The fence (the reference's "The driver epoch fence", the one
 *   rule): while a run driver of this package (`createRunDriver` over the
 *   same pool) holds a live claim on the run in this process, the update
 *   carries that claim's epoch and is refused with `ClaimLostError` (SB001,
 *   nothing changed) once another host claimed the run.  Without a claim
 *   here it carries no epoch and is accepted whoever drives the run (a
 *   cancel request from any replica); its `driverEpoch` may clear the
 *   epoch, keep it, or raise it above every epoch the run has had (a raise
 *   is a claim), and anything else is refused (SB001): it could let a
 *   superseded driver write again.
 * - Every record read is checked: a status that is not one of TanStack AI's
 *   is an error, not a record.
 */
export function createRunStore(pool: Pool, options: RunStoreOptions = {}): PgRunStore {
  return openRunStore(pool, resolveRunStoreOptions(options));
}

/** {@link RunStoreOptions}, checked, with the defaults filled in. */
export interface ResolvedRunStoreOptions {
  connectTimeoutMs: number;
}

/** The run store's options, checked, with the defaults filled in. */
export function resolveRunStoreOptions(options: RunStoreOptions): ResolvedRunStoreOptions {
  return { connectTimeoutMs: connectTimeoutOption(options.connectTimeoutMs) };
}

/** {@link createRunStore} with resolved options. */
export function openRunStore(pool: Pool, options: ResolvedRunStoreOptions): PgRunStore {
  const { connectTimeoutMs } = options;
  const one = async (text: string, values: readonly unknown[], what: string): Promise<RunRecord | null> => {
    const result = await poolQuery<{ record: string | null }>(pool, text, values, connectTimeoutMs, true);
    return runRecordFromText(result.rows[0]?.record ?? null, what);
  };
  const many = async (text: string, values: readonly unknown[], what: string): Promise<RunRecord[]> => {
    const result = await poolQuery<{ record: string | null }>(pool, text, values, connectTimeoutMs);
    return result.rows.map((row) => {
      const record = runRecordFromText(row.record, what);
      if (record === null) throw new SandboxStoreError(`${what} returned a NULL record`);
      return record;
    });
  };

  return {
    async createOrResume(input: RunCreateInput): Promise<RunRecord> {
      if (typeof input !== 'object' || input === null) {
        throw new InvalidArgumentError('createOrResume needs { runId, threadId, startedAt }', { sqlstate: '22023' });
      }
      const record = await one(
        RUN_CREATE_SQL,
        [input.runId ?? null, input.threadId ?? null, input.startedAt ?? null, input.status ?? 'running'],
        'run_create_or_resume',
      );
      if (record === null) throw new SandboxStoreError('run_create_or_resume returned no record');
      return record;
    },

    async update(runId: string, patch: RunRecordPatch): Promise<void> {
      const json = patchJson(patch);
      const claim = typeof runId === 'string' ? liveClaim(pool, runId) : undefined;
      try {
        await poolQuery(pool, RUN_UPDATE_SQL, [runId ?? null, json, claim?.epoch ?? null], connectTimeoutMs);
      } catch (error) {
        if (claim !== undefined && error instanceof ClaimLostError) claim.lose(error);
        throw error;
      }
    },

    get(runId: string): Promise<RunRecord | null> {
      return one(RUN_GET_SQL, [runId ?? null], 'run_get');
    },

    listByThread(threadId: string): Promise<RunRecord[]> {
      return many(RUN_LIST_BY_THREAD_SQL, [threadId ?? null], 'run_list_by_thread');
    },

    async listReclaimable(opts: { now: number; ttlMs: number }): Promise<RunRecord[]> {
      if (typeof opts !== 'object' || opts === null) {
        throw new InvalidArgumentError('listReclaimable needs { now, ttlMs }', { sqlstate: '22023' });
      }
      return many(RUN_LIST_RECLAIMABLE_SQL, [opts.now ?? null, opts.ttlMs ?? null], 'run_list_reclaimable');
    },

    findActiveRun(threadId: string): Promise<RunRecord | null> {
      return one(RUN_FIND_ACTIVE_SQL, [threadId ?? null], 'run_find_active');
    },
  };
}
