/**
 * `sandbox-store-client/tanstack`: the stores wired into `@tanstack/ai-sandbox`
 * 0.2.x (the version npm serves), where `withSandbox(definition)` takes no
 * stores and reads them as capabilities (`SandboxStoreCapability`,
 * `LocksCapability`) that a middleware placed before it provides.
 *
 * - `withDurableSandbox(definition, { instances, locks })`: the two
 *   middlewares in the right order, `[provideSandboxStores(...),
 *   withSandbox(definition)]`, both from the same copy of the package.
 * - `provideSandboxStores({ instances, locks })`: the providing middleware
 *   alone, for apps that compose their own list (it must come before
 *   `withSandbox`).
 *
 * Both check the wiring at every run and fail the run with a
 * `SandboxStoreError` instead of letting TanStack AI fall back to its
 * in-memory stores: placed after `withSandbox`, or a `withSandbox` that
 * ensured its sandbox without taking the lock through these stores (a
 * second copy of `@tanstack/ai-sandbox`, or a version that no longer reads
 * the capabilities).
 *
 * Only this entry point imports `@tanstack/ai-sandbox` (an optional peer
 * dependency); the main entry point works without any TanStack package.
 */
import type { DefinedChatMiddleware } from '@tanstack/ai';
import { LocksCapability, SandboxCapability, SandboxStoreCapability, withSandbox } from '@tanstack/ai-sandbox';
import type { SandboxDefinition } from '@tanstack/ai-sandbox';

import { InvalidArgumentError, SandboxStoreError } from './errors.js';
import type { LockStore, SandboxInstanceStore } from './types.js';

/** The stores to provide: `createInstanceStore(pool)` and `createLockStore(pool, ...)` over one pool. */
export interface SandboxStores {
  instances: SandboxInstanceStore;
  locks: LockStore;
}

/** The middleware `provideSandboxStores` returns. */
export type SandboxStoresMiddleware = DefinedChatMiddleware<
  unknown,
  readonly [],
  readonly [typeof SandboxStoreCapability, typeof LocksCapability]
>;

/** Per run: did the sandbox ensure take its lock through the provided lock store? */
const locked = new WeakMap<object, boolean>();

/**
 * A middleware that provides `instances` as TanStack AI's sandbox store and
 * `locks` as its lock store, for the `withSandbox` placed after it.
 *
 * Its `setup` refuses to run after `withSandbox` (the sandbox would already
 * have been ensured with the in-memory fallbacks). Its `onStart`, which runs
 * once every middleware's `setup` is done, fails the run if `withSandbox`
 * provided a sandbox without taking a lock through `locks`.
 */
export function provideSandboxStores(stores: SandboxStores): SandboxStoresMiddleware {
  const { instances, locks } = checkStores(stores);
  return {
    name: 'sandbox-store',
    provides: [SandboxStoreCapability, LocksCapability],
    setup(ctx) {
      if (SandboxCapability.has(ctx)) {
        throw new SandboxStoreError(
          'provideSandboxStores() runs after withSandbox(): the sandbox was already ensured without the ' +
            'PostgreSQL stores; place it before withSandbox() in the middleware list, or use withDurableSandbox()',
        );
      }
      locked.set(ctx, false);
      const counted: LockStore = {
        withLock: (key, fn) => {
          locked.set(ctx, true);
          return locks.withLock(key, fn);
        },
      };
      ctx.provide(SandboxStoreCapability, instances);
      ctx.provide(LocksCapability, counted);
    },
    onStart(ctx) {
      if (SandboxCapability.has(ctx) && locked.get(ctx) === false) {
        throw new SandboxStoreError(
          'withSandbox() ensured its sandbox without the PostgreSQL lock store provided by ' +
            'provideSandboxStores(): it used in-memory stores, so nothing was recorded and other processes ' +
            'are not excluded. Is a second copy of @tanstack/ai-sandbox installed (npm ls @tanstack/ai-sandbox)?',
        );
      }
    },
  };
}

/**
 * `withSandbox(definition)` with the PostgreSQL stores provided before it:
 * spread it into `chat()`'s middleware list.
 *
 * ```ts
 * chat({ adapter, messages, threadId, middleware: [...withDurableSandbox(sandbox, { instances, locks })] })
 * ```
 */
export function withDurableSandbox(
  definition: SandboxDefinition,
  stores: SandboxStores,
): readonly [SandboxStoresMiddleware, ReturnType<typeof withSandbox>] {
  return [provideSandboxStores(stores), withSandbox(definition)] as const;
}

function checkStores(stores: SandboxStores): SandboxStores {
  const s = stores as Partial<SandboxStores> | null | undefined;
  const instances = s?.instances;
  const locks = s?.locks;
  if (
    instances === undefined ||
    typeof instances.get !== 'function' ||
    typeof instances.upsert !== 'function' ||
    typeof instances.delete !== 'function'
  ) {
    throw new InvalidArgumentError('stores.instances must be an instance store (createInstanceStore(pool))', {
      sqlstate: '22023',
    });
  }
  if (locks === undefined || typeof locks.withLock !== 'function') {
    throw new InvalidArgumentError('stores.locks must be a lock store (createLockStore(pool, options))', {
      sqlstate: '22023',
    });
  }
  return { instances, locks };
}
