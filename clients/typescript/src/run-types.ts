/**
 * TanStack AI 0.58's durable-run contracts, declared structurally so that
 * this package imports no TanStack package at run time or in its
 * declarations: `RunStore` and `RunRecord` (`@tanstack/ai`'s
 * activities/chat/middleware/run-store), `StreamDurability` and
 * `UpsertableStreamDurability` (stream-durability), and the `claim`/`pipe`
 * pair of `RunDriverOptions` (stream-to-response).  A store, adapter or
 * driver of this package is assignable to TanStack AI 0.58's types (the
 * tests prove it); with TanStack AI 0.42 they are plain objects.
 *
 * Chunks are `any` unless given: TanStack AI's are its `StreamChunk`, which
 * this package does not import; with `any` an adapter of this package fits
 * TanStack's interface as it is.  Pass `StreamChunk` for strict typing.
 */

/** A terminal run status: no further events will be appended. */
export type TerminalRunStatus = 'completed' | 'failed' | 'aborted';

/** Lifecycle status of one run; `interrupted` is a pause, not terminal. */
export type RunStatus = 'running' | 'interrupted' | TerminalRunStatus;

const RUN_STATUSES: Readonly<Record<RunStatus, true>> = {
  running: true,
  interrupted: true,
  completed: true,
  failed: true,
  aborted: true,
};
const TERMINAL_STATUSES: Readonly<Record<TerminalRunStatus, true>> = { completed: true, failed: true, aborted: true };

/** Whether `value` is a {@link RunStatus} (own keys only: `'toString'` is not a status). */
export function isRunStatus(value: unknown): value is RunStatus {
  return typeof value === 'string' && Object.hasOwn(RUN_STATUSES, value);
}

/** Whether `status` is terminal. */
export function isTerminalRunStatus(status: RunStatus): status is TerminalRunStatus {
  return Object.hasOwn(TERMINAL_STATUSES, status);
}

/** Why a run failed: a message, and a machine-branchable code when there is one. */
export interface RunError {
  message: string;
  code?: string;
}

/**
 * Token usage of a run (TanStack AI's `TokenUsage`: the three totals and
 * optional details), stored as the JSON object it is.
 */
// biome-ignore lint/suspicious/noExplicitAny: the details keep TanStack AI's TokenUsage assignable both ways without importing it
export type RunUsage = { promptTokens: number; completionTokens: number; totalTokens: number } & Record<string, any>;

/** Durable bookkeeping for one run. Optional fields are absent, never `null`. */
export interface RunRecord {
  runId: string;
  /** The conversation (`Scope.threadId`). */
  threadId: string;
  status: RunStatus;
  /** Epoch milliseconds, exactly the number given. */
  startedAt: number;
  finishedAt?: number;
  error?: RunError;
  usage?: RunUsage;
  /** The sandbox key the run was bound to (written with `detachedSince`). */
  sandboxKey?: string;
  /** Epoch milliseconds when the last viewer detached; absent while someone is attached. */
  detachedSince?: number;
  /** An explicit out-of-band cancel was requested. */
  cancelRequested?: boolean;
  /** The run driver's fencing token: raised by every claim, never lowered. Absent: never claimed, or cleared. */
  driverEpoch?: number;
}

/**
 * The fields `update` patches.  A key that is present sets the field; a key
 * that is present with the value `undefined` clears it (as `{ ...record,
 * ...patch }` would leave `undefined` there); a key that is absent leaves it.
 */
export type RunRecordPatch = {
  [K in
    | 'status'
    | 'finishedAt'
    | 'error'
    | 'usage'
    | 'sandboxKey'
    | 'detachedSince'
    | 'cancelRequested'
    | 'driverEpoch']?: RunRecord[K] | undefined;
};

/** What `createOrResume` takes. */
export type RunCreateInput = Pick<RunRecord, 'runId' | 'threadId' | 'startedAt'> & { status?: RunStatus | undefined };

/** TanStack AI 0.58's `RunStore`, with every optional method present. */
export interface RunStore {
  /**
   * Create a run record, or return the existing one unchanged if `runId` is
   * already present (the other arguments are then ignored: a finished run
   * is never resurrected).  `status` defaults to `'running'`.
   */
  createOrResume: (input: RunCreateInput) => Promise<RunRecord>;
  /** Patch a record's mutable fields; an unknown `runId` is a no-op (no error, no record). */
  update: (runId: string, patch: RunRecordPatch) => Promise<void>;
  /** The current record, or `null` when unknown. */
  get: (runId: string) => Promise<RunRecord | null>;
  /** Every run of a conversation, ascending by `startedAt` (ties by run id). */
  listByThread: (threadId: string) => Promise<Array<RunRecord>>;
  /**
   * Runs with status `'running'` and `detachedSince <= now - ttlMs`
   * (inclusive), oldest detach first.
   */
  listReclaimable: (opts: { now: number; ttlMs: number }) => Promise<Array<RunRecord>>;
  /** The `'running'` run of `threadId` with the greatest `startedAt`, or `null`. */
  findActiveRun: (threadId: string) => Promise<RunRecord | null>;
}

/** One entry of a run log: the chunk and its resumable offset. */
// biome-ignore lint/suspicious/noExplicitAny: see the module comment
export interface RunLogEntry<TOffset extends string = string, TChunk = any> {
  offset: TOffset;
  chunk: TChunk;
}

/** TanStack AI 0.58's `StreamDurability`: a run's delivery log. */
// biome-ignore lint/suspicious/noExplicitAny: see the module comment
export interface StreamDurability<TOffset extends string = string, TChunk = any> {
  /** The offset the request resumes from, or `null` for a producer. */
  resumeFrom: () => TOffset | null;
  /** Persist a batch; one offset per chunk, in order. */
  append: (chunks: Array<TChunk>) => Promise<Array<TOffset>>;
  /** Entries strictly after `offset` (`'-1'`: from the start; `'now'`: from the tail), live until the log closes or `signal` aborts. */
  read: (offset: TOffset, signal?: AbortSignal) => AsyncIterable<RunLogEntry<TOffset, TChunk>>;
  /** Close the log: live readers end once they have read everything. */
  close: () => Promise<void>;
  /** Everything stored now, in order; never waits; `[]` for an unknown run. */
  snapshot: () => Promise<Array<RunLogEntry<TOffset, TChunk>>>;
}

/** A {@link StreamDurability} that can re-persist entries at offsets it minted. */
// biome-ignore lint/suspicious/noExplicitAny: see the module comment
export interface UpsertableStreamDurability<TOffset extends string = string, TChunk = any>
  extends StreamDurability<TOffset, TChunk> {
  /**
   * Persist entries at the given offsets, replacing what is stored there;
   * the whole batch is validated before anything is written.  Returns the
   * offsets in the order given.
   */
  upsert: (entries: Array<{ chunk: TChunk; offset: TOffset }>) => Promise<Array<TOffset>>;
}

/** What a run driver's `claim` hands to `fn`. */
export interface RunClaim {
  runId: string;
  /** The run's driver epoch this claim holds (`run_claim`'s answer). */
  epoch: number;
  /** Aborts when the lock or lease is lost, or the epoch is found superseded. */
  signal: AbortSignal;
}
