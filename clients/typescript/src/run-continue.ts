/**
 * Continuing a run after what its log holds: what a driver that takes a
 * run over needs to produce the rest of the answer without repeating or
 * forking it.
 *
 * - `resumeOf(chunks)` reads a log (TanStack AI 0.58's chunks, in order):
 *   the assistant message it ends in (its id, its text so far, whether it
 *   is still open) and whether the run has started or finished.
 * - `continueAfterLog(chunks, stream)` passes on what `stream` (the agent,
 *   asked to continue) produces, minus what would repeat the log: a second
 *   RUN_STARTED, and a TEXT_MESSAGE_START while the log's message is open
 *   (the new message's chunks then carry the open message's id, so the
 *   answer goes on in the same message; a tool call's parentMessageId
 *   too).  A message that the new stream starts and ends without content
 *   is dropped whole.
 *
 * Tool calls are passed on as they come: a tool call the log holds is the
 * agent's to skip or repeat (its id tells).
 */

// biome-ignore lint/suspicious/noExplicitAny: TanStack AI's StreamChunk, not imported (see run-types.ts)
type Chunk = any;

/** What a run's log holds, for the driver that continues it. */
export interface RunResume {
  /** The chunks of the log, in order. */
  chunks: Chunk[];
  /** The id of the last assistant message the log holds, if any. */
  messageId: string | undefined;
  /** That message's text so far (its deltas, joined). */
  text: string;
  /** Whether that message is still open (no TEXT_MESSAGE_END yet): the continuation goes on in it. */
  open: boolean;
  /** Whether the log holds a RUN_STARTED. */
  started: boolean;
  /** The terminal chunk (RUN_FINISHED or RUN_ERROR) the log holds, if any: then there is nothing to continue. */
  terminal: Chunk | undefined;
}

function typeOf(chunk: unknown): unknown {
  return typeof chunk === 'object' && chunk !== null ? (chunk as { type?: unknown }).type : undefined;
}

function messageIdOf(chunk: unknown): string | undefined {
  const id = typeof chunk === 'object' && chunk !== null ? (chunk as { messageId?: unknown }).messageId : undefined;
  return typeof id === 'string' ? id : undefined;
}

/** What a log (its chunks, in order) holds: see {@link RunResume}. */
export function resumeOf(chunks: readonly Chunk[]): RunResume {
  let messageId: string | undefined;
  let text = '';
  let open = false;
  let started = false;
  let terminal: Chunk | undefined;
  for (const chunk of chunks) {
    const type = typeOf(chunk);
    if (type === 'RUN_STARTED') started = true;
    else if (type === 'RUN_FINISHED' || type === 'RUN_ERROR') terminal = chunk;
    else if (type === 'TEXT_MESSAGE_START') {
      const role = (chunk as { role?: unknown }).role;
      if (role === undefined || role === 'assistant') {
        messageId = messageIdOf(chunk);
        text = '';
        open = true;
      }
    } else if (type === 'TEXT_MESSAGE_CONTENT' && messageIdOf(chunk) === messageId && messageId !== undefined) {
      const delta = (chunk as { delta?: unknown }).delta;
      if (typeof delta === 'string') text += delta;
    } else if (type === 'TEXT_MESSAGE_END' && messageIdOf(chunk) === messageId) open = false;
  }
  return { chunks: [...chunks], messageId, text, open, started, terminal };
}

/**
 * `stream`, the agent's continuation of a run whose log holds `chunks`,
 * without what would repeat the log (see the module comment).
 */
export async function* continueAfterLog(chunks: readonly Chunk[], stream: AsyncIterable<Chunk>): AsyncGenerator<Chunk> {
  const log = resumeOf(chunks);
  let openId = log.open ? log.messageId : undefined;
  /** Ids of the new stream's messages, mapped to the id the page already has. */
  const renamed = new Map<string, string>();
  /** A TEXT_MESSAGE_START held back until its message has content. */
  let held: Chunk | undefined;
  /** The chunk with its messageId (and a tool call's parentMessageId) as the page knows them. */
  const rename = (chunk: Chunk): Chunk => {
    const id = messageIdOf(chunk);
    const to = id === undefined ? undefined : renamed.get(id);
    const parent = typeof chunk === 'object' && chunk !== null ? chunk.parentMessageId : undefined;
    const toParent = typeof parent === 'string' ? renamed.get(parent) : undefined;
    if (to === undefined && toParent === undefined) return chunk;
    return {
      ...chunk,
      ...(to === undefined ? {} : { messageId: to }),
      ...(toParent === undefined ? {} : { parentMessageId: toParent }),
    };
  };
  let started = log.started;
  for await (const chunk of stream) {
    const type = typeOf(chunk);
    if (type === 'RUN_STARTED') {
      if (started) continue;
      started = true;
      yield chunk;
      continue;
    }
    const id = messageIdOf(chunk);
    if (type === 'TEXT_MESSAGE_START') {
      if (openId !== undefined && id !== undefined) {
        renamed.set(id, openId); // the answer goes on in the open message
        openId = undefined;
        continue;
      }
      if (held !== undefined) yield held;
      held = chunk;
      continue;
    }
    if (held !== undefined && id !== undefined && id === messageIdOf(held)) {
      if (type === 'TEXT_MESSAGE_END') {
        held = undefined; // started and ended without content: nothing to show
        continue;
      }
      yield held;
      held = undefined;
    }
    yield rename(chunk);
  }
  if (held !== undefined) yield held;
}
