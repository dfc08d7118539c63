/**
 * In-process order and exclusion per key.
 *
 * `Gate`: one per (pool, key), first come first served.  Only the holder of
 * the gate goes to the database for the key, so callers of one process meet
 * the database one at a time per key (one connection and one database
 * waiter per key per process), in the order they called.  A waiter gives up
 * when its signal aborts or its time runs out; the gate then passes on.
 *
 * `Mutex`: the same FIFO exclusion without a key, for the children of one
 * section that re-enter its key (two of them started concurrently run one
 * after the other).
 *
 * A wait that would close a cycle inside this process (A holds k1 and waits
 * for k2 while B holds k2 and waits for k1) is refused with
 * `DeadlockError` (40P01) at once, as PostgreSQL would refuse the same waits
 * on its own locks.
 */
import type { Pool } from 'pg';

import { DeadlockError, LockNotAvailableError } from '../errors.js';

/** Who holds a gate: a section (or the transaction of nested sections). */
export interface Owner {
  /** The gate this owner (or a section of its call chain) waits for, if any. */
  waitingFor: Gate | undefined;
}

interface Waiter {
  owner: Owner;
  grant: () => void;
}

export class Gate {
  owner: Owner | undefined;
  private readonly queue: Waiter[] = [];

  constructor(
    private readonly registry: Map<string, Gate>,
    readonly key: string,
  ) {}

  /**
   * Wait until `owner` holds the gate.  `waiters` are the owners of the
   * caller's call chain (for cycle detection); `waitMs` null waits without
   * bound, 0 not at all.
   */
  async enter(owner: Owner, waiters: readonly Owner[], waitMs: number | null, signal?: AbortSignal): Promise<void> {
    signal?.throwIfAborted();
    if (this.owner === undefined && this.queue.length === 0) {
      this.owner = owner;
      return;
    }
    if (waitMs === 0) {
      throw new LockNotAvailableError(`sandbox key "${this.key}" is held by another caller of this process`, {
        sqlstate: '55P03',
      });
    }
    this.checkCycle(waiters);
    await new Promise<void>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const waiter: Waiter = {
        owner,
        grant: () => {
          cleanup();
          resolve();
        },
      };
      const giveUp = (error: unknown): void => {
        const at = this.queue.indexOf(waiter);
        if (at >= 0) this.queue.splice(at, 1);
        cleanup();
        reject(error);
      };
      const onAbort = (): void => giveUp(signal?.reason);
      const cleanup = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        for (const w of waiters) if (w.waitingFor === this) w.waitingFor = undefined;
      };
      for (const w of waiters) w.waitingFor = this;
      this.queue.push(waiter);
      signal?.addEventListener('abort', onAbort, { once: true });
      if (waitMs !== null) {
        timer = setTimeout(
          () =>
            giveUp(
              new LockNotAvailableError(
                `sandbox key "${this.key}" was not obtained within ${waitMs} ms: another caller of this process holds it`,
                { sqlstate: '55P03' },
              ),
            ),
          waitMs,
        );
      }
    });
  }

  /** Give the gate to the next waiter (or free it). */
  leave(): void {
    const next = this.queue.shift();
    if (next === undefined) {
      this.owner = undefined;
      this.registry.delete(this.key);
      return;
    }
    this.owner = next.owner;
    next.grant();
  }

  /** Refuse a wait whose holder, through the gates it waits for, waits for the caller. */
  private checkCycle(waiters: readonly Owner[]): void {
    const seen = new Set<Gate>();
    let gate: Gate | undefined = this;
    while (gate !== undefined && !seen.has(gate)) {
      seen.add(gate);
      const holder: Owner | undefined = gate.owner;
      if (holder === undefined) return;
      if (waiters.includes(holder)) {
        throw new DeadlockError(
          `deadlock detected: waiting for sandbox key "${this.key}" would wait for a key this call chain holds`,
          { sqlstate: '40P01' },
        );
      }
      gate = holder.waitingFor;
    }
  }
}

const gates = new WeakMap<Pool, Map<string, Gate>>();

/** The gate of `key` over `pool`. */
export function gateOf(pool: Pool, key: string): Gate {
  let registry = gates.get(pool);
  if (registry === undefined) {
    registry = new Map();
    gates.set(pool, registry);
  }
  let gate = registry.get(key);
  if (gate === undefined) {
    gate = new Gate(registry, key);
    registry.set(key, gate);
  }
  return gate;
}

/** FIFO mutual exclusion (the children of a section that re-enter its key). */
export class Mutex {
  private tail: Promise<void> = Promise.resolve();

  /** Run `fn` once every earlier caller's `fn` has settled. */
  async run<T>(fn: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    const previous = this.tail;
    let done!: () => void;
    this.tail = new Promise<void>((resolve) => {
      done = resolve;
    });
    try {
      if (signal !== undefined) {
        signal.throwIfAborted();
        await new Promise<void>((resolve, reject) => {
          const onAbort = (): void => reject(signal.reason);
          signal.addEventListener('abort', onAbort, { once: true });
          void previous.then(() => {
            signal.removeEventListener('abort', onAbort);
            resolve();
          });
        });
      } else {
        await previous;
      }
      return await fn();
    } finally {
      // A caller that gave up passes its turn on once the one before it is done.
      void previous.then(done);
    }
  }
}
