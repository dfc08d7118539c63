/**
 * The run log listener: ONE connection per pool that LISTENs on
 * `sandbox_store_run_log` (the payload of each notification is a run id) and
 * wakes the readers of that run.  Every reader of the pool shares it.
 *
 * - It is a client of its own, built from the pool's options (the same
 *   server, user and settings), so it takes none of the pool's slots; its
 *   `application_name` is the pool's with `/run_log_listener` added.
 * - A reader subscribes before it reads the log's status: once
 *   `subscription.ready` resolved, the LISTEN is in effect, so every write
 *   committed after the reader's query wakes it (`version` moves).
 * - After an error of the connection it reconnects (while anyone is
 *   subscribed, with a growing pause), then wakes every reader, which
 *   re-reads: nothing committed while it was away is missed.
 * - With no subscriber it lets go: the socket is unref'd at once (it never
 *   keeps the process alive) and the connection is closed after `idleMs`.
 */
import type { Client, ClientConfig, Notification, Pool } from 'pg';

import { SandboxStoreError, toStoreError } from '../errors.js';
import { RUN_LOG_CHANNEL, RUN_LOG_LISTEN_SQL } from './sql.js';

/** How long an idle listener connection stays open for the next reader. */
const IDLE_MS = 2_000;
const RECONNECT_MIN_MS = 50;
const RECONNECT_MAX_MS = 5_000;

/** The outcome of a wait. */
export type WaitResult = 'wake' | 'timeout' | 'abort';

/** A reader's subscription to the notifications of one run. */
export class Subscription {
  /** Moves on every notification of the run (and after a reconnect). */
  version = 0;
  private readonly wakers = new Set<() => void>();

  constructor(
    readonly runId: string,
    /** Resolves once the LISTEN is in effect; rejects if the listener could not connect. */
    readonly ready: Promise<void>,
    private readonly onClose: (subscription: Subscription) => void,
  ) {}

  /** @internal */
  bump(): void {
    this.version++;
    for (const wake of [...this.wakers]) wake();
  }

  /** Wait until `version` is past `seen`, `timeoutMs` passed, or `signal` aborts. */
  wait(seen: number, timeoutMs: number | undefined, signal: AbortSignal | undefined): Promise<WaitResult> {
    if (this.version !== seen) return Promise.resolve('wake');
    if (signal?.aborted) return Promise.resolve('abort');
    return new Promise<WaitResult>((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const done = (result: WaitResult): void => {
        this.wakers.delete(wake);
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        resolve(result);
      };
      const wake = (): void => done('wake');
      const onAbort = (): void => done('abort');
      this.wakers.add(wake);
      signal?.addEventListener('abort', onAbort, { once: true });
      if (timeoutMs !== undefined) timer = setTimeout(() => done('timeout'), Math.max(0, timeoutMs));
    });
  }

  close(): void {
    for (const wake of [...this.wakers]) wake();
    this.onClose(this);
  }
}

type ClientClass = new (config: ClientConfig) => Client;

/** The client's socket, to (un)ref it; node-postgres keeps it on `connection.stream`. */
function socketOf(client: Client): { ref?: () => void; unref?: () => void } | undefined {
  return (client as unknown as { connection?: { stream?: { ref?: () => void; unref?: () => void } } }).connection
    ?.stream;
}

const listeners = new WeakMap<Pool, RunLogListener>();

export class RunLogListener {
  private readonly subscriptions = new Map<string, Set<Subscription>>();
  private count = 0;
  private client: Client | undefined;
  /** The connection being made (or remade); resolves once LISTEN is in effect. */
  private connecting: Promise<void> | undefined;
  private idleTimer: NodeJS.Timeout | undefined;
  private failures = 0;
  private reconnectTimer: NodeJS.Timeout | undefined;

  private constructor(private readonly pool: Pool) {}

  /** The listener of `pool` (made on first use). */
  static of(pool: Pool): RunLogListener {
    let listener = listeners.get(pool);
    if (listener === undefined) {
      listener = new RunLogListener(pool);
      listeners.set(pool, listener);
    }
    return listener;
  }

  /** Subscribe to `runId`; await `ready` before reading the log. */
  subscribe(runId: string): Subscription {
    clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
    const ready = this.ensure();
    ready.catch(() => undefined);
    const subscription = new Subscription(runId, ready, (s) => this.unsubscribe(s));
    let set = this.subscriptions.get(runId);
    if (set === undefined) {
      set = new Set();
      this.subscriptions.set(runId, set);
    }
    set.add(subscription);
    this.count++;
    if (this.client !== undefined) socketOf(this.client)?.ref?.();
    return subscription;
  }

  private unsubscribe(subscription: Subscription): void {
    const set = this.subscriptions.get(subscription.runId);
    if (set === undefined || !set.delete(subscription)) return;
    if (set.size === 0) this.subscriptions.delete(subscription.runId);
    this.count--;
    if (this.count === 0) this.idle();
  }

  /** No subscriber: never keep the process alive, and close after IDLE_MS. */
  private idle(): void {
    if (this.client !== undefined) socketOf(this.client)?.unref?.();
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => {
      this.idleTimer = undefined;
      if (this.count === 0) this.drop(undefined);
    }, IDLE_MS);
    this.idleTimer.unref();
  }

  /** Connected with LISTEN in effect (connects if needed). */
  private ensure(): Promise<void> {
    if (this.client !== undefined && this.connecting === undefined) return Promise.resolve();
    if (this.connecting === undefined) {
      this.connecting = this.connect().finally(() => {
        this.connecting = undefined;
      });
    }
    return this.connecting;
  }

  private async connect(): Promise<void> {
    const ClientOf = (this.pool as unknown as { Client?: ClientClass }).Client;
    if (typeof ClientOf !== 'function') {
      throw new SandboxStoreError('the pool has no Client class to open the run log listener with (is it a pg.Pool?)');
    }
    const options = (this.pool as unknown as { options?: ClientConfig & { application_name?: string } }).options ?? {};
    const name = `${options.application_name ?? 'sandbox_store'}/run_log_listener`.slice(0, 63);
    const client = new ClientOf({ ...options, application_name: name });
    client.on('error', () => this.lost(client));
    client.on('end', () => this.lost(client));
    client.on('notification', (message: Notification) => {
      if (message.channel !== RUN_LOG_CHANNEL || message.payload === undefined) return;
      const set = this.subscriptions.get(message.payload);
      if (set !== undefined) for (const subscription of [...set]) subscription.bump();
    });
    try {
      await client.connect();
      await client.query(RUN_LOG_LISTEN_SQL);
    } catch (error) {
      client.removeAllListeners('end');
      client.on('error', () => undefined);
      void client.end().catch(() => undefined);
      throw toStoreError(error);
    }
    this.client = client;
    this.failures = 0;
    if (this.count === 0) this.idle();
  }

  /** The connection failed or ended: forget it, and reconnect if anyone is subscribed. */
  private lost(client: Client): void {
    if (this.client !== client) return;
    this.drop(client);
    this.reconnectLater();
  }

  private reconnectLater(): void {
    if (this.count === 0 || this.reconnectTimer !== undefined) return;
    const delay = Math.min(RECONNECT_MAX_MS, RECONNECT_MIN_MS * 2 ** this.failures);
    this.failures++;
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      if (this.count === 0 || this.client !== undefined) return;
      this.ensure().then(
        // Back: wake everyone, so each reader re-reads what it may have missed.
        () => {
          for (const set of this.subscriptions.values()) for (const subscription of [...set]) subscription.bump();
        },
        () => this.reconnectLater(),
      );
    }, delay);
    this.reconnectTimer.unref();
  }

  private drop(client: Client | undefined): void {
    const current = client ?? this.client;
    if (current === undefined || this.client !== current) return;
    this.client = undefined;
    current.removeAllListeners('end');
    current.removeAllListeners('notification');
    current.on('error', () => undefined);
    void current.end().catch(() => undefined);
  }
}
