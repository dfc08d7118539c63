/**
 * Lease mode (`LeaseHold`): a claim taken in autocommit; nothing stays open.
 * A timer renews it every `renewEveryMs` (default lease/3) with
 * `sandbox_renew`; a renewal that fails (SB001: released or taken over; or
 * any other error), or a lease that runs out locally before a renewal came
 * back, aborts the signal.  At the end `sandbox_release` gives the key back.
 *
 * A claim wait given up through the caller's signal is cancelled in the
 * database, and a claim granted just before the cancel is released.
 */
import { performance } from 'node:perf_hooks';
import type { Pool, QueryResult, QueryResultRow } from 'pg';

import {
  ClaimLostError,
  LockLostError,
  SandboxStoreError,
  isConnectionError,
  sqlstateOf,
  toStoreError,
} from '../errors.js';
import { gateOf, type Gate, type Owner } from './gate.js';
import { Frame, chainOwners, runInFrame } from './frames.js';
import { Hold, type Section } from './hold.js';
import { connect, poolQuery, type BackgroundErrorHandler } from './pool.js';
import { RELEASE_SQL, RENEW_SQL } from './sql.js';
import { remainingWait, waitingStatement, type KeyStatement, type WaitOptions, type WaitOutcome } from './wait.js';

/** Timing of a lease: how long it lasts and how often it is renewed. */
export interface LeaseTiming {
  leaseMs: number;
  renewEveryMs: number;
}

/** Lease mode: a claim (fence + owner token), renewed on a timer while the section runs. */
export class LeaseHold extends Hold {
  readonly mode = 'lease';
  private renewTimer: NodeJS.Timeout | undefined;
  private expiryTimer: NodeJS.Timeout | undefined;
  /**
   * When the last successful claim or renewal was *sent* (performance.now()):
   * the server set the expiry later than that, so the lease lasts at least
   * leaseMs from then.
   */
  private validFrom: number;
  /** Statements of the instance store (fenced writes) not yet answered. */
  private readonly inFlight = new Set<Promise<void>>();

  private constructor(
    pool: Pool,
    key: string,
    owner: Owner,
    private readonly gate: Gate,
    readonly fence: string,
    readonly ownerToken: string,
    private readonly timing: LeaseTiming,
    sentAt: number,
    onError: BackgroundErrorHandler,
    connectTimeoutMs: number,
  ) {
    super(pool, key, owner, onError, connectTimeoutMs);
    this.validFrom = sentAt;
  }

  /** A claim holds its own key only. */
  holdsKey(key: string): boolean {
    return key === this.key;
  }

  /**
   * Claim the key with `statement` (an autocommit sandbox_claim, whose row has
   * `fence` and `owner_token`), after this process's earlier callers of the
   * key, and start renewing.
   */
  static async take<R extends QueryResultRow & { fence: string | null; owner_token: string | null }>(
    pool: Pool,
    key: string,
    statement: KeyStatement,
    timing: LeaseTiming,
    wait: WaitOptions,
  ): Promise<{ section: Section; rows: R[]; hold: LeaseHold }> {
    const owner: Owner = { waitingFor: undefined };
    const gate = gateOf(pool, key);
    const started = performance.now();
    await gate.enter(owner, [...chainOwners(), owner], wait.waitMs, wait.signal);
    let row: R | undefined;
    let rows: R[];
    let sentAt: number;
    let handedOff = false; // the gate is left by the cleanup of an abandoned claim
    try {
      const client = await connect(pool, wait.connectTimeoutMs, wait.signal);
      sentAt = performance.now();
      let outcome: WaitOutcome<R>;
      try {
        const values = statement.values(remainingWait(wait, started));
        outcome = await waitingStatement<R>(client, statement.text, values, wait.signal);
      } catch (error) {
        client.release();
        throw error;
      }
      const abandoned = outcome.abandoned;
      if (abandoned !== undefined) {
        // Given up through the signal: once the cancelled statement ended,
        // close its client, give back a claim granted before the cancel
        // landed, and let the next caller of the key in.
        void (async () => {
          const late = await abandoned;
          client.release(true);
          const token = late?.rows[0]?.owner_token;
          if (token != null) {
            await poolQuery(pool, RELEASE_SQL, [key, token], wait.connectTimeoutMs).catch(wait.onError);
          }
          gate.leave();
        })();
        handedOff = true;
        throw outcome.error;
      }
      client.release(isConnectionError(outcome.error) ? true : undefined);
      row = outcome.result?.rows[0];
      if (outcome.result === undefined) throw toStoreError(outcome.error);
      rows = outcome.result.rows;
    } catch (error) {
      if (!handedOff) gate.leave();
      throw error;
    }
    if (row === undefined || row.fence === null || row.owner_token === null) {
      gate.leave();
      throw new SandboxStoreError(`no claim was returned for sandbox key "${key}" (is the extension at 1.1?)`);
    }
    const hold = new LeaseHold(
      pool,
      key,
      owner,
      gate,
      row.fence,
      row.owner_token,
      timing,
      sentAt,
      wait.onError,
      wait.connectTimeoutMs,
    );
    try {
      // The claim may have been granted only after a long wait for the key:
      // if a renewal is already due, make it before the section starts.
      if (performance.now() - sentAt >= timing.renewEveryMs) await hold.renew(true);
      hold.schedule();
    } catch (error) {
      await hold.finish();
      throw error;
    }
    return {
      hold,
      rows,
      section: {
        hold,
        run: async <T>(fn: (signal: AbortSignal) => Promise<T>): Promise<T> => {
          try {
            return await runInFrame(new Frame(hold, key), () => fn(hold.signal));
          } finally {
            await hold.finish();
          }
        },
        abandon: () => hold.finish(),
      },
    };
  }

  /**
   * Reads go through the pool; writes of the held key carry the fence (the
   * instance store adds it).  `finish` waits for the statements still on
   * their way before it releases: a fence is refused once its claim ended.
   */
  query<R extends QueryResultRow>(text: string, values: readonly unknown[]): Promise<QueryResult<R>> {
    const pending = poolQuery<R>(this.pool, text, values, this.connectTimeoutMs);
    const settled = pending.then(
      () => undefined,
      () => undefined,
    );
    this.inFlight.add(settled);
    void settled.then(() => this.inFlight.delete(settled));
    return pending;
  }

  private schedule(): void {
    if (!this.active || this.signal.aborted) return;
    const now = performance.now();
    clearTimeout(this.renewTimer);
    clearTimeout(this.expiryTimer);
    this.renewTimer = setTimeout(
      () => void this.renew(false),
      Math.max(0, this.validFrom + this.timing.renewEveryMs - now),
    );
    this.expiryTimer = setTimeout(
      () => {
        this.lose(
          new LockLostError(
            `lost the claim on sandbox key "${this.key}": its lease (${this.timing.leaseMs} ms) ran out before a renewal succeeded`,
          ),
        );
      },
      Math.max(0, this.validFrom + this.timing.leaseMs - now),
    );
  }

  /** Renew once; on failure abort the signal (and throw, if asked). */
  private async renew(throwOnFailure: boolean): Promise<void> {
    if (!this.active || this.signal.aborted) return;
    const sentAt = performance.now();
    try {
      await poolQuery(this.pool, RENEW_SQL, [this.key, this.ownerToken, this.timing.leaseMs], this.connectTimeoutMs);
    } catch (error) {
      if (!this.active) return;
      const reason =
        error instanceof ClaimLostError
          ? error
          : new LockLostError(`lost the claim on sandbox key "${this.key}": it could not be renewed`, {
              sqlstate: sqlstateOf(error),
              cause: error,
            });
      this.lose(reason);
      clearTimeout(this.renewTimer);
      clearTimeout(this.expiryTimer);
      if (throwOnFailure) throw reason;
      return;
    }
    if (!this.active || this.signal.aborted) return;
    this.validFrom = sentAt;
    this.schedule();
  }

  async finish(): Promise<void> {
    if (!this.active) return;
    this.active = false; // new instance-store calls go through the pool, unfenced, from now on
    clearTimeout(this.renewTimer);
    clearTimeout(this.expiryTimer);
    // Those already sent carry the fence: let them arrive while the claim lives.
    await Promise.all(this.inFlight);
    try {
      await poolQuery(this.pool, RELEASE_SQL, [this.key, this.ownerToken], this.connectTimeoutMs);
    } catch (error) {
      // The lease runs out by itself; nobody waits on this.
      this.onError(error);
    } finally {
      this.gate.leave();
    }
  }
}
