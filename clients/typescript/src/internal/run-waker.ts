/**
 * The run log waker: a log's appends are written with notify false and their
 * readers woken after the commit, by run_log_wake (extension 1.7.0), instead
 * of a notification in the appending transaction.  PostgreSQL serializes the
 * commits of notifying transactions across the server, WAL flush included,
 * so a watched log's append in one transaction ran at a third to a half of
 * an unwatched one (docs/reference.md, "Waking readers").
 *
 * - ONE waker per pool: every run appended to since the last wake goes into
 *   the next, one statement for all of them (while one is in flight, the
 *   runs appended meanwhile wait for it, then go together).
 * - The append resolves once its wake was sent: when `append` returns, the
 *   readers have been told (so `await log.append(...); await pool.end()`
 *   loses no wake).  A reader is never woken before the entries are
 *   committed (the wake runs after), and never misses them: a reader that
 *   marked the log watched before the wake is notified; one that marked it
 *   after the commit reads them in its first read.  A wake that fails is
 *   tried again (three times, a growing pause), then given up: what is lost
 *   then, or when the process dies between a commit and its wake, is found
 *   by the next write of the log (an append, its close) or a reader's
 *   re-read (docs/reference.md).  A failed wake never fails the append
 *   (its entries are committed: a retried append would repeat them).
 * - Used only when the database has both functions and the role may execute
 *   them (asked per pool; a "no" is asked again after a while, so a grant
 *   made later is picked up); otherwise, and when a call finds them gone or
 *   revoked, the append notifies in its transaction as before 1.7.0.
 */
import type { Pool } from 'pg';

import { sqlstateOf } from '../errors.js';
import { DEFAULT_CONNECT_TIMEOUT_MS, poolQuery } from './pool.js';
import { LOG_NOTIFY_SQL, LOG_WAKE_SQL, LOG_WAKE_SUPPORTED_SQL } from './sql.js';

const RETRIES = 3;
const RETRY_MS = 100;
/** How long a "no" of supports() holds before it is asked again. */
const RECHECK_MS = 30_000;

/** A missing function (42883) or one this role may not execute (42501). */
export function isMissingOrDenied(error: unknown): boolean {
  const sqlstate = sqlstateOf(error);
  return sqlstate === '42883' || sqlstate === '42501';
}

export class RunLogWaker {
  private static readonly wakers = new WeakMap<Pool, RunLogWaker>();

  /** The waker of the pool (made on first use). */
  static of(pool: Pool): RunLogWaker {
    let waker = RunLogWaker.wakers.get(pool);
    if (waker === undefined) {
      waker = new RunLogWaker(pool);
      RunLogWaker.wakers.set(pool, waker);
    }
    return waker;
  }

  private supported: Promise<boolean> | undefined;
  /** When a "no" is asked again. */
  private recheckAt: number | undefined;
  /** The runs to wake next, each with the appends that wait for it. */
  private pending = new Map<string, Array<() => void>>();
  private sending = false;
  /** The next statement notifies the channel directly (run_log_wake failed with 42883 or 42501). */
  private fallback = false;

  private constructor(private readonly pool: Pool) {}

  /** Whether appends may be written with notify false (an error is not kept; a "no" for RECHECK_MS). */
  supports(connectTimeoutMs: number): Promise<boolean> {
    if (this.recheckAt !== undefined && Date.now() >= this.recheckAt) this.forget();
    if (this.supported === undefined) {
      const asked = poolQuery<{ supported: boolean }>(this.pool, LOG_WAKE_SUPPORTED_SQL, [], connectTimeoutMs).then(
        (result) => {
          const supported = result.rows[0]?.supported === true;
          if (!supported && this.supported === asked) this.recheckAt = Date.now() + RECHECK_MS;
          return supported;
        },
      );
      this.supported = asked;
      asked.catch(() => {
        if (this.supported === asked) this.supported = undefined;
      });
    }
    return this.supported;
  }

  /** Ask again at the next append (the functions went away, or their grant). */
  forget(): void {
    this.supported = undefined;
    this.recheckAt = undefined;
  }

  /**
   * Wake the readers of runId's log (its append committed); resolves once
   * the wake was sent or given up, never rejects.
   */
  wake(runId: string): Promise<void> {
    return new Promise<void>((resolve) => {
      const waiting = this.pending.get(runId);
      if (waiting === undefined) this.pending.set(runId, [resolve]);
      else waiting.push(resolve);
      if (!this.sending) void this.send();
    });
  }

  private async send(): Promise<void> {
    this.sending = true;
    try {
      while (this.pending.size > 0) {
        const batch = this.pending;
        this.pending = new Map();
        const runIds = [...batch.keys()];
        for (let attempt = 0; ; attempt++) {
          // A pool that is ending takes no more queries: nobody is left to wake.
          if (isEnding(this.pool)) break;
          try {
            await poolQuery(
              this.pool,
              this.fallback ? LOG_NOTIFY_SQL : LOG_WAKE_SQL,
              [runIds],
              DEFAULT_CONNECT_TIMEOUT_MS,
            );
            this.fallback = false;
            break;
          } catch (error) {
            if (isMissingOrDenied(error) && !this.fallback) {
              // run_log_wake went away, or its grant: these runs' appends are
              // committed without a notification; notify the channel directly,
              // at once (every listener then gets them, watched or not), and
              // the next append asks again (and notifies in its transaction).
              this.forget();
              this.fallback = true;
              continue;
            }
            if (attempt >= RETRIES) break;
            await new Promise<void>((resolve) => setTimeout(resolve, RETRY_MS * (attempt + 1)));
          }
        }
        for (const resolvers of batch.values()) for (const resolve of resolvers) resolve();
      }
    } finally {
      this.sending = false;
    }
  }
}

function isEnding(pool: Pool): boolean {
  const state = pool as unknown as { ending?: boolean; ended?: boolean };
  return state.ending === true || state.ended === true;
}
