/**
 * `sandbox-store-client/browser`: what a page needs so that
 * `@tanstack/ai-client` reconnects to a durable chat route
 * (`createChatHandlers`) whenever the replica it streams from is gone.
 * Imports nothing (no `pg`, no Node.js module): bundle it into the page.
 *
 * `@tanstack/ai-client` 0.33 reconnects (the same POST, with
 * `Last-Event-ID`) when a response's body fails or ends before the run's
 * last event.  Two faults give it neither: a replica that stopped (a
 * SIGSTOP, a hung event loop, a machine that froze) keeps the connection
 * open and sends nothing, and a proxy that answers 502, 503 or 504 for a
 * dead replica gives a response the client takes as the run's failure.
 * `stallFetch` turns both into a failed connection:
 *
 * ```ts
 * import { fetchServerSentEvents } from '@tanstack/ai-client'
 * import { stallFetch } from 'sandbox-store-client/browser'
 *
 * const connection = fetchServerSentEvents('/api/chat', {
 *   fetchClient: stallFetch({ silenceMs: 15_000 }),
 *   reconnect: { maxAttempts: 20 },
 * })
 * ```
 *
 * `silenceMs` must be well above the route's `heartbeatMs` (default 5 000
 * ms: 15 000 leaves room for two lost beats).  A reconnect that reaches a
 * live replica never fails while that replica waits for the lease of the
 * one it replaces: its heartbeats keep the connection, so the lease costs
 * no attempts.  Attempts are spent only on connections that fail (a
 * refused connection, a 5xx, a stopped replica's silence), so
 * `reconnect.maxAttempts` × (`reconnect.delayMs` + the time one failed
 * attempt takes, up to `silenceMs`) must exceed the time your load
 * balancer needs to stop sending requests to a dead replica (its health
 * check's interval × failures to mark it down, plus its timeout).
 */

/** Why `stallFetch` failed a connection. */
export class StreamStalledError extends Error {
  override name = 'StreamStalledError';
}

export interface StallFetchOptions {
  /** Fail the connection after this long without a byte, headers included (default 15 000 ms). */
  silenceMs?: number;
  /** Statuses that are a failed connection, not an answer (default 502, 503, 504). */
  retryStatuses?: readonly number[];
  /** The fetch to wrap (default `globalThis.fetch`). */
  fetch?: typeof fetch;
}

const DEFAULT_SILENCE_MS = 15_000;
const DEFAULT_RETRY_STATUSES: readonly number[] = [502, 503, 504];

/**
 * A `fetch` (for `fetchServerSentEvents`' `fetchClient`) that fails a
 * request after `silenceMs` without a byte (no headers, or a body that
 * stopped), and a response with a status of `retryStatuses`, as a network
 * error: `@tanstack/ai-client` then reconnects.  An abort of the caller's
 * signal is passed on as it is.
 */
export function stallFetch(options: StallFetchOptions = {}): typeof fetch {
  const silenceMs = options.silenceMs ?? DEFAULT_SILENCE_MS;
  if (!Number.isFinite(silenceMs) || silenceMs <= 0) throw new RangeError('silenceMs must be a positive number');
  const retryStatuses = new Set(options.retryStatuses ?? DEFAULT_RETRY_STATUSES);
  const base = options.fetch ?? ((input, init) => globalThis.fetch(input, init));

  return async (input, init) => {
    const controller = new AbortController();
    const outer = init?.signal ?? undefined;
    const onOuterAbort = (): void => controller.abort(outer?.reason);
    if (outer?.aborted) controller.abort(outer.reason);
    else outer?.addEventListener('abort', onOuterAbort, { once: true });
    let timer: ReturnType<typeof setTimeout> | undefined;
    const stall = (): void =>
      controller.abort(new StreamStalledError(`no byte from the server for ${silenceMs} ms: reconnecting`));
    const arm = (): void => {
      clearTimeout(timer);
      timer = setTimeout(stall, silenceMs);
    };
    const disarm = (): void => {
      clearTimeout(timer);
      outer?.removeEventListener('abort', onOuterAbort);
    };

    arm();
    let response: Response;
    try {
      response = await base(input, { ...init, signal: controller.signal });
    } catch (error) {
      disarm();
      throw error;
    }
    if (retryStatuses.has(response.status)) {
      disarm();
      await response.body?.cancel().catch(() => undefined);
      throw new TypeError(`the server answered ${response.status}: reconnecting`);
    }
    const source = response.body;
    if (source === null) {
      disarm();
      return response;
    }
    arm();
    const reader = source.getReader();
    const body = new ReadableStream<Uint8Array>({
      async pull(stream) {
        try {
          const { done, value } = await reader.read();
          if (done) {
            disarm();
            stream.close();
            return;
          }
          arm();
          stream.enqueue(value);
        } catch (error) {
          disarm();
          const reason: unknown = controller.signal.reason;
          stream.error(reason instanceof StreamStalledError ? reason : error);
        }
      },
      async cancel(reason) {
        disarm();
        await reader.cancel(reason).catch(() => undefined);
      },
    });
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
}
