/**
 * Helpers of the checkpoint store's tests: checkpoints built from a seed
 * (so a child process and the parent build the same one), blob keys no
 * other test uses, and the observable state of a thread.
 */
import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import type pg from 'pg';

import {
  SandboxCheckpointError,
  SandboxStoreError,
  type PgSandboxCheckpointStore,
  type SandboxCheckpoint,
  type SandboxCheckpointErrorCode,
  type SandboxSnapshotArtifact,
  type SandboxSnapshotEntry,
} from '../src/index.js';

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** A file blob key of `seed` (sandbox-files/sha256/<64 hex>). */
export function fileKey(seed: string): string {
  return `sandbox-files/sha256/${sha256(seed)}`;
}

/** An artifact blob key of `seed`. */
export function artifactKey(seed: string): string {
  return `sandbox-artifacts/sha256/${sha256(seed)}`;
}

/** A prefix no other test (or test process) uses, for thread ids, checkpoint ids and blob seeds. */
export function scope(name: string): string {
  return `ckpt-test/${name}/${randomUUID()}`;
}

export function file(path: string, seed: string, size = 1): SandboxSnapshotEntry {
  return { path, kind: 'file', blobKey: fileKey(seed), size };
}

export function dir(path: string): SandboxSnapshotEntry {
  return { path, kind: 'dir' };
}

export function artifact(seed: string, createdAt = 1): SandboxSnapshotArtifact {
  return {
    artifactId: `artifact-${seed}`,
    name: 'report.pdf',
    mimeType: 'application/pdf',
    size: 3,
    blobKey: artifactKey(seed),
    createdAt,
  };
}

/** A conversation message as TanStack AI stores them (some text, a tool call, a tool result). */
export interface Message {
  role: 'user' | 'assistant' | 'tool';
  content: string | null;
  toolCalls?: Array<{ id: string; type: 'function'; function: { name: string; arguments: string } }>;
  toolCallId?: string;
}

/**
 * About `bytes` of conversation (as JSON) from `seed`: deterministic, with
 * non-ASCII text (2-, 3- and 4-byte UTF-8), quotes, backslashes, newlines.
 */
export function conversation(seed: string, bytes: number, messageBytes = 20_000): Message[] {
  const messages: Message[] = [];
  let size = 0;
  let n = 0;
  const unit = `${seed} — «ü» 中文 😀 "q" \\ \n`;
  while (size < bytes || messages.length === 0) {
    const text = unit.repeat(Math.max(1, Math.floor(Math.min(messageBytes, bytes - size) / unit.length)));
    let message: Message;
    if (n % 3 === 0) message = { role: 'user', content: `${n}: ${text}` };
    else if (n % 3 === 1) {
      message = {
        role: 'assistant',
        content: null,
        toolCalls: [
          { id: `call-${n}`, type: 'function', function: { name: 'bash', arguments: JSON.stringify({ cmd: text }) } },
        ],
      };
    } else message = { role: 'tool', content: text, toolCallId: `call-${n - 1}` };
    messages.push(message);
    size += JSON.stringify(message).length;
    n++;
  }
  return messages;
}

/** A checkpoint; `extra` overrides any field. */
export function checkpoint(
  id: string,
  threadId: string,
  parentCheckpointId: string | null,
  createdAt: number,
  extra: Partial<SandboxCheckpoint<Message>> = {},
): SandboxCheckpoint<Message> {
  return {
    id,
    threadId,
    parentCheckpointId,
    createdAt,
    reason: 'automatic',
    files: [],
    conversation: [{ role: 'user', content: `hello from ${id}` }],
    artifacts: [],
    ...extra,
  };
}

/** What a thread looks like from outside, and the references of `keys` (absent keys omitted). */
export async function stateOf(
  store: PgSandboxCheckpointStore,
  threadId: string,
  keys: readonly string[] = [],
): Promise<{ head: string | null; checkpoints: unknown[]; references: Record<string, number> }> {
  const references: Record<string, number> = {};
  for (const { key, references: n } of await store.listBlobReferences()) if (keys.includes(key)) references[key] = n;
  return { head: await store.getHead(threadId), checkpoints: await store.list(threadId), references };
}

/** Asserts that `promise` rejects with a SandboxCheckpointError of `code`; returns it. */
export async function rejectsWith(
  promise: Promise<unknown>,
  code: SandboxCheckpointErrorCode,
  sqlstate?: string | undefined,
): Promise<SandboxCheckpointError> {
  let caught: unknown;
  try {
    await promise;
  } catch (error) {
    caught = error;
  }
  assert.ok(caught !== undefined, `expected ${code}, but it resolved`);
  assert.ok(caught instanceof SandboxCheckpointError, `expected ${code}, got ${String(caught)}`);
  assert.ok(caught instanceof SandboxStoreError);
  assert.equal(caught.code, code, caught.message);
  if (sqlstate !== undefined) assert.equal(caught.sqlstate, sqlstate, caught.message);
  return caught;
}

/** How many times `pool` hands out a connection from now on (every statement of the store takes one). */
export function checkouts(pool: pg.Pool): { readonly count: number; stop: () => void } {
  let count = 0;
  const onAcquire = () => {
    count++;
  };
  pool.on('acquire', onAcquire);
  return {
    get count() {
      return count;
    },
    stop: () => pool.off('acquire', onAcquire),
  };
}

/** UTF-8 byte order, the contract's order of ids. */
export function utf8Order(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

/**
 * A large checkpoint from `seed`: about `bytes` of conversation, `files`
 * files in a few directories (each its own blob, plus one blob `shared`
 * that every checkpoint of a test points to).
 */
export function bigCheckpoint(
  id: string,
  threadId: string,
  parentCheckpointId: string | null,
  seed: string,
  bytes: number,
  files: number,
  shared: string,
): SandboxCheckpoint<Message> {
  return checkpoint(id, threadId, parentCheckpointId, 2, {
    files: [
      file('shared.bin', shared),
      ...Array.from({ length: files }, (_, i) => file(`src/d${i % 7}/f${i}.ts`, `${seed}/${i}`, i)),
    ],
    conversation: conversation(seed, bytes),
  });
}
