/**
 * Two app servers, two processes, one thread: both run chat() for the same
 * thread at the same time. The key's lock (in PostgreSQL) lets one create the
 * sandbox while the other waits, then resumes it: exactly one create.
 *
 *   node dist/main.js [threadId]
 *
 * Prints every line of the two servers, the record in the database and a
 * summary ({ creates, resumes, sandboxes }); exits 1 unless there was exactly
 * one create and one resume of the same sandbox.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';

import pg from 'pg';

import { listSandboxes } from './fake-provider.js';

const SERVER = fileURLToPath(new URL('./server.js', import.meta.url));
const threadId = process.argv[2] ?? `thread-${randomUUID()}`;

interface Line {
  server: string;
  call?: string;
  sandboxId?: string;
  answer?: string;
}

function runServer(name: string): Promise<Line[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SERVER, threadId, name], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      out += chunk;
      process.stdout.write(chunk);
    });
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) reject(new Error(`${name} exited with code ${code}`));
      else
        resolve(
          out
            .split('\n')
            .filter((line) => line !== '')
            .map((line) => JSON.parse(line) as Line),
        );
    });
  });
}

const before = new Set(await listSandboxes());
const lines = (await Promise.all([runServer('server-a'), runServer('server-b')])).flat();

const creates = lines.filter((line) => line.call === 'create');
const resumes = lines.filter((line) => line.call === 'resume');
const answers = lines.filter((line) => line.answer !== undefined);
const sandboxes = (await listSandboxes()).filter((id) => !before.has(id));

const pool = new pg.Pool({ max: 1 });
try {
  const { rows } = await pool.query('SELECT * FROM sandbox_store.sandbox_list($1)', [threadId]);
  console.log(JSON.stringify({ record: rows[0] ?? null }));
} finally {
  await pool.end();
}

const summary = { threadId, creates: creates.length, resumes: resumes.length, answers: answers.length, sandboxes };
console.log(JSON.stringify({ summary }));
const ok =
  creates.length === 1 &&
  resumes.length === 1 &&
  answers.length === 2 &&
  resumes[0]?.sandboxId === creates[0]?.sandboxId &&
  sandboxes.length === 1;
if (!ok) {
  console.error('expected exactly one create and one resume of the same sandbox');
  process.exitCode = 1;
}
