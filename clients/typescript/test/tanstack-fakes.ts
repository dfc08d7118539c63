/**
 * Fakes for runs through the real `@tanstack/ai` and `@tanstack/ai-sandbox`:
 * a text adapter that answers "ok" without a network, and a sandbox
 * provider (defined with the package's own `defineSandbox`) that logs every
 * create, resume and destroy in the database (fake_provider_calls).
 */
import { randomUUID } from 'node:crypto';

import { chat, type DefaultMessageMetadataByModality, type StreamChunk } from '@tanstack/ai';
import { BaseTextAdapter, type StructuredOutputResult } from '@tanstack/ai/adapters';
import {
  defineSandbox,
  defineWorkspace,
  localSource,
  type SandboxConfig,
  type SandboxDefinition,
  type SandboxHandle,
  type SandboxProvider,
} from '@tanstack/ai-sandbox';
import type pg from 'pg';

import { logProviderCall, sleep } from './helpers.js';

/** A model that streams one short answer. */
export class FakeTextAdapter extends BaseTextAdapter<
  'fake-model',
  Record<string, never>,
  readonly ['text'],
  DefaultMessageMetadataByModality
> {
  readonly name = 'fake';

  constructor() {
    super({}, 'fake-model');
  }

  async *chatStream(): AsyncIterable<StreamChunk> {
    const messageId = randomUUID();
    const timestamp = Date.now();
    yield { type: 'TEXT_MESSAGE_START', messageId, role: 'assistant', timestamp } as StreamChunk;
    yield { type: 'TEXT_MESSAGE_CONTENT', messageId, delta: 'ok', timestamp } as StreamChunk;
    yield { type: 'TEXT_MESSAGE_END', messageId, timestamp } as StreamChunk;
    yield { type: 'RUN_FINISHED', threadId: '', runId: '', finishReason: 'stop', timestamp } as StreamChunk;
  }

  async structuredOutput(): Promise<StructuredOutputResult<unknown>> {
    return { data: null, rawText: '' };
  }
}

function unsupported(): never {
  throw new Error('not supported by the fake sandbox');
}

/** A handle that can do nothing but say it is not a git repository. */
export function fakeHandle(id: string): SandboxHandle {
  return {
    id,
    provider: 'fake',
    capabilities: {
      fs: true,
      exec: true,
      env: false,
      ports: false,
      backgroundProcesses: false,
      writableStdin: false,
      snapshots: false,
      networkPolicy: false,
      durableFilesystem: false,
      fork: false,
    },
    fs: {
      read: unsupported,
      readBytes: unsupported,
      write: unsupported,
      list: unsupported,
      mkdir: unsupported,
      remove: unsupported,
      rename: unsupported,
      exists: async () => false,
    },
    git: {
      clone: unsupported,
      status: unsupported,
      add: unsupported,
      commit: unsupported,
      push: unsupported,
      pull: unsupported,
      branch: unsupported,
    },
    process: {
      exec: async () => ({ stdout: '', stderr: 'not a git repository', exitCode: 128 }),
      spawn: unsupported,
    },
    ports: { connect: unsupported },
    env: { set: unsupported },
    destroy: async () => undefined,
  };
}

export interface FakeProviderOptions {
  /** The thread the calls are logged under. */
  threadId: string;
  /** How long a create takes. */
  createDelayMs?: number;
  /** Called when a create starts (after it was logged). */
  onCreate?: () => void;
}

/** A provider whose every call is logged in fake_provider_calls (autocommit, through `pool`). */
export function fakeProvider(pool: pg.Pool, options: FakeProviderOptions): SandboxProvider {
  const log = (op: string, id: string) => logProviderCall(pool, options.threadId, op, id);
  return {
    name: 'fake',
    capabilities: () => fakeHandle('').capabilities,
    create: async () => {
      const id = `sbx-${randomUUID()}`;
      await log('create', id);
      options.onCreate?.();
      await sleep(options.createDelayMs ?? 0);
      return fakeHandle(id);
    },
    resume: async ({ id }) => {
      await log('resume', id);
      return fakeHandle(id);
    },
    destroy: async ({ id }) => {
      await log('destroy', id);
    },
  };
}

/**
 * The app's sandbox config over the fake provider: a local workspace
 * (0.2.4's withSandbox fails a run without one: it declares that it
 * provides the workspace projection) and no file watcher.
 */
export function fakeSandboxConfig(pool: pg.Pool, options: FakeProviderOptions): SandboxConfig {
  return {
    id: 'dev',
    provider: fakeProvider(pool, options),
    workspace: defineWorkspace({ source: localSource('.') }),
    fileEvents: false,
  };
}

/** The app's sandbox definition, as 0.2.4 defines it. */
export function fakeSandbox(pool: pg.Pool, options: FakeProviderOptions): SandboxDefinition {
  return defineSandbox(fakeSandboxConfig(pool, options));
}

/** One chat() run with `middleware`; resolves with the answer's text. */
export function runChat(threadId: string, runId: string, middleware: readonly unknown[]): Promise<string> {
  return chat({
    adapter: new FakeTextAdapter(),
    messages: [{ role: 'user', content: 'hello' }],
    threadId,
    runId,
    stream: false,
    debug: false, // the tests look at the failures themselves
    middleware: middleware as never,
  });
}
