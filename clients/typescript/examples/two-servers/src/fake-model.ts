/**
 * A fake model adapter: streams one short answer, without a network or an
 * API key. Use a real adapter in an app (e.g. `openaiText('gpt-4o')` from
 * `@tanstack/ai-openai`).
 */
import { randomUUID } from 'node:crypto';

import type { DefaultMessageMetadataByModality, StreamChunk } from '@tanstack/ai';
import { BaseTextAdapter, type StructuredOutputResult } from '@tanstack/ai/adapters';

export class FakeModelAdapter extends BaseTextAdapter<
  'fake-model',
  Record<string, never>,
  readonly ['text'],
  DefaultMessageMetadataByModality
> {
  readonly name = 'fake';

  constructor(private readonly answer = 'Hello from the fake model.') {
    super({}, 'fake-model');
  }

  async *chatStream(): AsyncIterable<StreamChunk> {
    const messageId = randomUUID();
    const timestamp = Date.now();
    yield { type: 'TEXT_MESSAGE_START', messageId, role: 'assistant', timestamp } as StreamChunk;
    yield { type: 'TEXT_MESSAGE_CONTENT', messageId, delta: this.answer, timestamp } as StreamChunk;
    yield { type: 'TEXT_MESSAGE_END', messageId, timestamp } as StreamChunk;
    yield { type: 'RUN_FINISHED', threadId: '', runId: '', finishReason: 'stop', timestamp } as StreamChunk;
  }

  async structuredOutput(): Promise<StructuredOutputResult<unknown>> {
    return { data: null, rawText: '' };
  }
}
