/**
 * clients/typescript/test/citus/client-locks.mjs: the client's hold of a
 * key on Citus, with the package as an app uses it (its built dist/, a
 * pg.Pool on the coordinator, nothing that knows of Citus).
 * test/citus/client-locks.pl (the repository's Perl TAP test) runs it and
 * checks what it prints.
 *
 *   node client-locks.mjs URL lock KEY WAIT_MS
 *   node client-locks.mjs URL ensure KEY WAIT_MS
 *   node client-locks.mjs URL delete KEY
 *   node client-locks.mjs URL calls KEY RUN_ID
 *
 * URL is the coordinator's (postgresql://user@host:port/db).
 *
 * - lock: a lock-mode withLock of KEY waiting at most WAIT_MS; once inside
 *   it prints `held`, stays until a line (or the end) arrives on stdin,
 *   then leaves and prints `released`.
 * - ensure: a lock-mode ensureSandbox of KEY (thread t, run r, provider p)
 *   waiting at most WAIT_MS; its create (or resume) prints `held create`
 *   (`held resume`) and waits for stdin likewise; then `outcome OUTCOME`.
 * - delete: the instance store's delete of KEY (unfenced: it waits for the
 *   key as long as it is held), then `deleted`.
 * - calls: every keyed statement of the client, once or more, for KEY and
 *   RUN_ID (the test then looks for them in the nodes' statement logs):
 *   upsert and get; a lock-mode withLock with a get, an upsert and a list
 *   inside; a lock-mode ensure (resume: its stamp), the delete, a lock-mode
 *   ensure again (create: the record written in its transaction); a
 *   lease-mode withLock that stays until a renewal moved the claim's expiry
 *   (claim, renew, release) and a lease-mode ensure (claim, the fenced
 *   upsert of its resume stamp, release); the run store's createOrResume and
 *   get and a run driver's claim.  Each step prints a line; `done` at the
 *   end.
 *
 * A refused hold prints `refused NAME SQLSTATE` (the error's class and
 * SQLSTATE) instead; any other failure `error MESSAGE` and exit 1.
 */
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';

import {
  LockNotAvailableError,
  createInstanceStore,
  createLockStore,
  createRunDriver,
  createRunStore,
  ensureSandbox,
} from '../../dist/index.js';

const [url, command, key, arg] = process.argv.slice(2);
if (url === undefined || command === undefined || key === undefined) {
  console.error('usage: node client-locks.mjs URL lock|ensure|delete|calls KEY [WAIT_MS|RUN_ID]');
  process.exit(2);
}

const pool = new pg.Pool({ connectionString: url, max: 4, application_name: 'client-locks' });
const lines = createInterface({ input: process.stdin });
const input = lines[Symbol.asyncIterator]();

/** Until a line arrives on stdin (or stdin ends). */
async function released() {
  await input.next();
}

/** Print and flush before going on: the test reads the lines as they come. */
function say(line) {
  process.stdout.write(`${line}\n`);
}

const record = (k, sandbox) => ({
  key: k,
  provider: 'p',
  providerSandboxId: sandbox,
  threadId: 't',
  latestRunId: 'r',
  updatedAt: 1767323045678.125,
});

function ensureOptions(k, waitMs, mode, hold) {
  return {
    key: k,
    threadId: 't',
    runId: 'r',
    provider: 'p',
    waitMs,
    mode,
    create: async () => {
      if (hold) {
        say('held create');
        await released();
      }
      return { sandbox: 'created', providerSandboxId: 'sbx-client' };
    },
    resume: async () => {
      if (hold) {
        say('held resume');
        await released();
      }
      return 'resumed';
    },
  };
}

async function lock() {
  const locks = createLockStore(pool, { mode: 'lock', waitMs: Number(arg) });
  await locks.withLock(key, async () => {
    say('held');
    await released();
  });
  say('released');
}

async function ensure() {
  const result = await ensureSandbox(pool, ensureOptions(key, Number(arg), 'lock', true));
  say(`outcome ${result.outcome}`);
}

async function remove() {
  await createInstanceStore(pool).delete(key);
  say('deleted');
}

async function calls() {
  const runId = arg;
  const instances = createInstanceStore(pool);
  await instances.upsert(record(key, 'sbx-1'));
  say(`get ${(await instances.get(key))?.providerSandboxId}`);

  const locks = createLockStore(pool, { mode: 'lock', waitMs: 0 });
  await locks.withLock(key, async () => {
    const inside = await instances.get(key);
    await instances.upsert(record(key, 'sbx-2'));
    say(`lock-mode section: get ${inside?.providerSandboxId}, list ${(await instances.list('t')).length}`);
  });

  say(`lock-mode ensure ${(await ensureSandbox(pool, ensureOptions(key, 0, 'lock', false))).outcome}`);
  await instances.delete(key);
  say(`deleted, get ${await instances.get(key)}`);
  const created = await ensureSandbox(pool, ensureOptions(key, 0, 'lock', false));
  say(`lock-mode ensure ${created.outcome} ${created.record.providerSandboxId}`);

  // Lease mode: stay in the section until a renewal moved the claim's expiry.
  const leases = createLockStore(pool, { mode: 'lease', waitMs: 0, leaseMs: 30_000, renewEveryMs: 50 });
  await leases.withLock(key, async () => {
    const expiry = async () =>
      (
        await pool.query(
          'SELECT lease_expires_at::pg_catalog.text AS at FROM sandbox_store.claims WHERE key OPERATOR(pg_catalog.=) $1',
          [key],
        )
      ).rows[0]?.at;
    const first = await expiry();
    const deadline = Date.now() + 60_000;
    while ((await expiry()) === first) {
      if (Date.now() > deadline) throw new Error('the claim was not renewed within 60 s');
      await sleep(20);
    }
  });
  say('lease-mode section renewed');
  say(`lease-mode ensure ${(await ensureSandbox(pool, ensureOptions(key, 0, 'lease', false))).outcome}`);

  const runs = createRunStore(pool);
  await runs.createOrResume({ runId, threadId: 't', startedAt: 1767323045678 });
  say(`run get ${(await runs.get(runId))?.status}`);
  const driver = createRunDriver(pool);
  const epoch = await driver.claim({ runId, locks }, async (claim) => claim.epoch);
  say(`run claimed epoch ${epoch}`);
  say('done');
}

const commands = { lock, ensure, delete: remove, calls };
const run = commands[command];
if (run === undefined) {
  console.error(`client-locks.mjs: unknown command ${command}`);
  process.exit(2);
}
let code = 0;
try {
  await run();
} catch (error) {
  if (error instanceof LockNotAvailableError) say(`refused ${error.name} ${error.sqlstate}`);
  else {
    say(`error ${error instanceof Error ? error.message : String(error)}`);
    code = 1;
  }
} finally {
  lines.close();
  await pool.end();
}
process.exit(code);
