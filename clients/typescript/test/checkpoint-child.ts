/**
 * One writer process for checkpoint-processes.test.ts: its own pool, one
 * checkpoint store, one append.
 *
 *   node checkpoint-child.js '<ChildArgs as JSON>'
 *
 * Builds its checkpoint (bigCheckpoint from `seed`) first.  With barrier,
 * prints "ready" and waits for a line on stdin.  Then acquires its own
 * writer (unless `writer` is given; on the database clock, or on `clockMs`
 * if given), prints "sending", appends on `expectedHeadId`, and prints one
 * JSON line: { stage: 'acquire' | 'append', code: 'won' | <error code>, fence }.
 */
import { createCheckpointStore, SandboxCheckpointError, type SandboxCheckpointWriter } from '../src/index.js';
import { bigCheckpoint } from './checkpoints.js';
import { newPool } from './helpers.js';

export interface ChildArgs {
  threadId: string;
  checkpointId: string;
  expectedHeadId: string | null;
  seed: string;
  shared: string;
  bytes: number;
  files: number;
  writer?: SandboxCheckpointWriter;
  clockMs?: number;
  leaseMs: number;
  barrier: boolean;
  applicationName: string;
  /** client_connection_check_interval of the child's session (ms), so its backend notices a dead client. */
  connectionCheckMs?: number;
}

export interface ChildResult {
  stage: 'acquire' | 'append';
  code: string;
  fence: number | null;
}

const args = JSON.parse(process.argv[2] ?? '{}') as ChildArgs;
const pool = newPool(2, {
  application_name: args.applicationName,
  ...(args.connectionCheckMs !== undefined
    ? { options: `-c client_connection_check_interval=${args.connectionCheckMs}` }
    : {}),
});
const store = createCheckpointStore(pool, {
  leaseDurationMs: args.leaseMs,
  renewAfterMs: Math.floor(args.leaseMs / 2),
  ...(args.clockMs !== undefined ? { now: () => args.clockMs as number } : {}),
});

function codeOf(error: unknown): string {
  if (error instanceof SandboxCheckpointError) return error.code;
  throw error;
}

function report(result: ChildResult): void {
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

try {
  const checkpoint = bigCheckpoint(
    args.checkpointId,
    args.threadId,
    args.expectedHeadId,
    args.seed,
    args.bytes,
    args.files,
    args.shared,
  );
  await pool.query('SELECT 1');
  if (args.barrier) {
    process.stdout.write('ready\n');
    await new Promise<void>((resolve) => {
      process.stdin.once('data', () => resolve());
    });
    process.stdin.destroy();
  }
  let writer: SandboxCheckpointWriter | undefined = args.writer;
  if (writer === undefined) {
    try {
      writer = await store.acquireWriter(args.threadId);
    } catch (error) {
      report({ stage: 'acquire', code: codeOf(error), fence: null });
    }
  }
  if (writer !== undefined) {
    process.stdout.write('sending\n');
    try {
      await store.append({ checkpoint, expectedHeadId: args.expectedHeadId, writer });
      report({ stage: 'append', code: 'won', fence: writer.fence });
    } catch (error) {
      report({ stage: 'append', code: codeOf(error), fence: writer.fence });
    }
  }
} finally {
  await pool.end();
}
