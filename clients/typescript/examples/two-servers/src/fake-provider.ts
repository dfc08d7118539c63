/**
 * A fake sandbox provider, for trying the wiring without a sandbox service.
 *
 * A "sandbox" is a JSON file in a directory that every process of the
 * example shares (SANDBOX_DIR, default <tmpdir>/sandbox-store-two-servers),
 * so a process can resume a sandbox another process created, as with a
 * real provider. Each call is reported through `onCall`. The sandbox can
 * run nothing: its shell answers every command with exit code 127, and its
 * file system is empty.
 */
import { randomUUID } from 'node:crypto';
import { mkdir, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import type { SandboxHandle, SandboxProvider } from '@tanstack/ai-sandbox';

export type ProviderCall = 'create' | 'resume' | 'destroy';

export interface FakeProviderOptions {
  /** Where the sandboxes live (shared by the processes). */
  dir?: string;
  /** How long a create takes, in ms (a real one takes seconds). */
  createMs?: number;
  /** Told of every call. */
  onCall?: (call: ProviderCall, sandboxId: string) => void;
}

export function sandboxDir(): string {
  return process.env['SANDBOX_DIR'] ?? join(tmpdir(), 'sandbox-store-two-servers');
}

/** The ids of the sandboxes that exist in `dir`. */
export async function listSandboxes(dir = sandboxDir()): Promise<string[]> {
  const names = await readdir(dir).catch(() => []);
  return names.filter((name) => name.endsWith('.json')).map((name) => name.slice(0, -'.json'.length));
}

function unsupported(): never {
  throw new Error('the fake sandbox cannot do this');
}

function fakeHandle(id: string, destroy: () => Promise<void>): SandboxHandle {
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
      exec: async () => ({ stdout: '', stderr: 'the fake sandbox has no shell', exitCode: 127 }),
      spawn: unsupported,
    },
    ports: { connect: unsupported },
    env: { set: unsupported },
    destroy,
  };
}

export function fakeProvider(options: FakeProviderOptions = {}): SandboxProvider {
  const dir = options.dir ?? sandboxDir();
  const file = (id: string) => join(dir, `${id}.json`);
  const destroy = async (id: string) => {
    options.onCall?.('destroy', id);
    await rm(file(id), { force: true });
  };
  return {
    name: 'fake',
    capabilities: () => fakeHandle('', async () => undefined).capabilities,
    create: async ({ id: key }) => {
      const id = `fake-${randomUUID()}`;
      options.onCall?.('create', id);
      await new Promise((resolve) => setTimeout(resolve, options.createMs ?? 0));
      await mkdir(dir, { recursive: true });
      await writeFile(file(id), JSON.stringify({ id, key, createdBy: process.pid, createdAt: Date.now() }));
      return fakeHandle(id, () => destroy(id));
    },
    resume: async ({ id }) => {
      options.onCall?.('resume', id);
      const exists = await stat(file(id)).then(
        () => true,
        () => false,
      );
      return exists ? fakeHandle(id, () => destroy(id)) : null;
    },
    destroy: ({ id }) => destroy(id),
  };
}
