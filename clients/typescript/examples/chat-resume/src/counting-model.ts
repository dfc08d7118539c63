/**
 * A fake model adapter that needs no network or API key: it answers with
 * `tokens` numbered tokens ("t0 t1 t2 ..."), one every `tokenMs`, and,
 * asked to continue an answer (the last message is the assistant's partial
 * answer), goes on after the last token that answer holds.  A real model
 * is asked the same way: the conversation, then the partial answer as the
 * start of its reply.  Use a real adapter in an app (e.g. `openaiText(...)`
 * from `@tanstack/ai-openai`).
 */
import { randomUUID } from 'node:crypto';

import type { DefaultMessageMetadataByModality, StreamChunk, TextOptions } from '@tanstack/ai';
import { BaseTextAdapter, type StructuredOutputResult } from '@tanstack/ai/adapters';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** The first token a partial answer does not hold. */
export function nextToken(partial: string): number {
  const found = partial.match(/t(\d+) /g);
  return found === null ? 0 : Number(found.at(-1)?.slice(1, -1)) + 1;
}

export class CountingModel extends BaseTextAdapter<
  'counting-model',
  Record<string, never>,
  readonly ['text'],
  DefaultMessageMetadataByModality
> {
  readonly name = 'counting';

  constructor(
    private readonly tokens: number,
    private readonly tokenMs: number,
  ) {
    super({}, 'counting-model');
  }

  async *chatStream(options: TextOptions): AsyncIterable<StreamChunk> {
    const last = options.messages.at(-1);
    const partial = last?.role === 'assistant' && typeof last.content === 'string' ? last.content : '';
    const messageId = randomUUID();
    yield { type: 'TEXT_MESSAGE_START', messageId, role: 'assistant', timestamp: Date.now() } as StreamChunk;
    for (let i = nextToken(partial); i < this.tokens; i++) {
      await sleep(this.tokenMs);
      if (options.abortController?.signal.aborted) return;
      yield { type: 'TEXT_MESSAGE_CONTENT', messageId, delta: `t${i} `, timestamp: Date.now() } as StreamChunk;
    }
    yield { type: 'TEXT_MESSAGE_END', messageId, timestamp: Date.now() } as StreamChunk;
    yield { type: 'RUN_FINISHED', threadId: '', runId: '', finishReason: 'stop', timestamp: Date.now() } as StreamChunk;
  }

  async structuredOutput(): Promise<StructuredOutputResult<unknown>> {
    return { data: null, rawText: '' };
  }
}
