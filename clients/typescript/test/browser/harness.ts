/**
 * What the browser scenarios share: the page's bundle, the browser, replica
 * processes, and waits on what the test can observe (DOM state, process
 * output, rows), never on time alone.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

import { build } from 'esbuild';
import { type Browser, chromium, type Page } from 'playwright-core';

import { sleep } from '../helpers.js';
import type { PageState } from './page.js';
import type { ReplicaArgs } from './replica.js';

/** This line's directory (the sources; the compiled files are in build/test/browser). */
export const LINE_DIR = fileURLToPath(new URL('../../../', import.meta.url));
const REPLICA = fileURLToPath(new URL('./replica.js', import.meta.url));
/** Where the page's bundle goes. */
export const PAGE_DIR = fileURLToPath(new URL('../../page/', import.meta.url));

export const CHROMIUM = process.env['SB_CHROMIUM'] ?? '/usr/bin/chromium';

/** esbuild: page.ts and what it imports (TanStack AI's client from this line's node_modules) into PAGE_DIR/page.js. */
export async function bundlePage(): Promise<void> {
  await build({
    entryPoints: [`${LINE_DIR}page.ts`],
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'chrome120',
    outfile: `${PAGE_DIR}page.js`,
    sourcemap: 'inline',
    logLevel: 'warning',
  });
}

/**
 * Debian's chromium, headless, through playwright-core.  Playwright gives
 * each launch a fresh profile (--user-data-dir in a new temporary
 * directory, removed at close) and --no-sandbox with chromiumSandbox off (as
 * root Chromium refuses to start with its sandbox).  Nothing is downloaded.
 */
export async function launchBrowser(): Promise<Browser> {
  if (!existsSync(CHROMIUM))
    throw new Error(`${CHROMIUM} not found: install Debian's chromium (test/scripts/install-deps.sh)`);
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    chromiumSandbox: false,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

export interface Replica {
  name: string;
  port: number;
  child: ChildProcess;
  /** The "@ " lines it printed, parsed, in order. */
  lines: Array<Record<string, unknown>>;
  stderr: () => string;
  /** Resolves when it exited (or was killed). */
  exited: Promise<void>;
}

/** Starts a replica (replica.ts) and resolves once it listens. */
export async function startReplica(args: Omit<ReplicaArgs, 'page'>): Promise<Replica> {
  const child = spawn(process.execPath, [REPLICA, JSON.stringify({ ...args, page: PAGE_DIR })], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: Array<Record<string, unknown>> = [];
  let err = '';
  let buffer = '';
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (chunk: string) => {
    err += chunk;
  });
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  const port = await new Promise<number>((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', (code, signal) => reject(new Error(`replica ${args.name} exited (${code ?? signal}): ${err}`)));
    child.stdout?.setEncoding('utf8');
    child.stdout?.on('data', (chunk: string) => {
      buffer += chunk;
      let newline = buffer.indexOf('\n');
      while (newline >= 0) {
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + 1);
        const listening = /^listening (\d+)$/.exec(line);
        if (listening) resolve(Number(listening[1]));
        else if (line.startsWith('@ ')) lines.push(JSON.parse(line.slice(2)) as Record<string, unknown>);
        newline = buffer.indexOf('\n');
      }
    });
  });
  return { name: args.name, port, child, lines, stderr: () => err, exited };
}

/** Ends a replica for good (SIGCONT first, should it be stopped). */
export async function stopReplica(replica: Replica): Promise<void> {
  if (replica.child.exitCode !== null || replica.child.signalCode !== null) return;
  replica.child.kill('SIGCONT');
  replica.child.kill('SIGKILL');
  await replica.exited;
}

/**
 * Resolves with check()'s value once it is truthy, looking every everyMs;
 * rejects after timeoutMs (generous: only a failing test waits that long)
 * with what() — the state that explains it.
 */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T> | T,
  options: { timeoutMs?: number; everyMs?: number; explain?: () => Promise<string> | string } = {},
): Promise<NonNullable<T>> {
  const { timeoutMs = 60_000, everyMs = 10 } = options;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) {
      throw new Error(`${what}: not within ${timeoutMs} ms${options.explain ? `\n${await options.explain()}` : ''}`);
    }
    await sleep(everyMs);
  }
}

export function pageState(page: Page): Promise<PageState> {
  return page.evaluate(() => window.chatTest.state());
}

/** The tokens "t0 " .. "t<n-1> ", as one text. */
export function tokenText(n: number): string {
  return Array.from({ length: n }, (_, i) => `t${i} `).join('');
}

/** How many tokens the page's assistant messages show. */
export function tokensShown(state: PageState): number {
  return state.messages
    .filter((m) => m.role === 'assistant')
    .reduce((n, m) => n + (m.text.match(/t\d+ /g) ?? []).length, 0);
}
