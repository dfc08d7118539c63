/**
 * The call chain's holds, in an AsyncLocalStorage context: a section runs
 * in a frame of its key, so that its own call chain may enter the key again
 * (instead of waiting for itself), the instance store finds the hold its
 * writes of the key go through (the transaction, or the claim's fence), and
 * the gates see the chain's owners for their cycle check.  Children started
 * concurrently inside a section take the key one after the other
 * (`Frame.children`).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Pool } from 'pg';

import { Mutex, type Owner } from './gate.js';
import type { Hold } from './hold.js';

/** One entry of a call chain's context: `key` is held by `hold`. */
export class Frame {
  /** The children of this section that enter its key again, one at a time. */
  readonly children = new Mutex();
  constructor(
    readonly hold: Hold,
    readonly key: string,
  ) {}
}

const storage = new AsyncLocalStorage<readonly Frame[]>();

function frames(): readonly Frame[] {
  return storage.getStore() ?? [];
}

/** Run `fn` with `frame` added to the call chain's context. */
export function runInFrame<T>(frame: Frame, fn: () => Promise<T>): Promise<T> {
  return storage.run([...frames(), frame], fn);
}

/** The innermost live frame of `key` over `pool` in this call chain. */
export function findFrame(pool: Pool, key: string): Frame | undefined {
  const stack = frames();
  for (let i = stack.length - 1; i >= 0; i--) {
    const frame = stack[i];
    if (frame !== undefined && frame.hold.active && frame.hold.pool === pool && frame.key === key) return frame;
  }
  return undefined;
}

/**
 * The innermost live hold over `pool` in this call chain that passes `test`
 * (a type guard narrows the result: lock-tx.ts's `findTx`).
 */
export function innermostHold<H extends Hold>(pool: Pool, test: (hold: Hold) => hold is H): H | undefined;
export function innermostHold(pool: Pool, test: (hold: Hold) => boolean): Hold | undefined;
export function innermostHold(pool: Pool, test: (hold: Hold) => boolean): Hold | undefined {
  const stack = frames();
  for (let i = stack.length - 1; i >= 0; i--) {
    const hold = stack[i]?.hold;
    if (hold !== undefined && hold.active && hold.pool === pool && test(hold)) return hold;
  }
  return undefined;
}

/**
 * The hold that writes of `key` go through: a frame of the key, or a
 * lock-mode transaction of this call chain that holds the key's lock.
 */
export function findHold(pool: Pool, key: string): Hold | undefined {
  const frame = findFrame(pool, key);
  if (frame !== undefined) return frame.hold;
  const tx = innermostHold(pool, (hold) => hold.mode === 'lock');
  return tx !== undefined && tx.holdsKey(key) ? tx : undefined;
}

/** The owners of this call chain (for the gates' cycle check). */
export function chainOwners(): Owner[] {
  const owners: Owner[] = [];
  for (const frame of frames()) if (!owners.includes(frame.hold.owner)) owners.push(frame.hold.owner);
  return owners;
}
