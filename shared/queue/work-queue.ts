/**
 * Background work of the service: delivering pending script runs to an agent that just connected (API
 * Gateway takes no message on a connection before its $connect returns), PSA event deliveries with their retries, and
 * audit rows whose write failed, spooled for a replay (shared/audit/spool.ts). The queue carries jobs without knowing
 * them: their table is functions/queue/jobs.ts.
 * In AWS a job is an SQS message handled by the queue worker function (functions/queue/worker.ts; no idle cost);
 * without WORK_QUEUE_URL (npm start, tests) the same job runs in this process after its delay.
 * The one adapter of the SQS client (each AWS SDK client has one module).
 */
import { randomUUID } from 'node:crypto';
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { logger } from '../logger.ts';

/** A background job: its kind names its runner in functions/queue/jobs.ts, the rest is that runner's input. */
export interface Job {
  kind: string;
  [field: string]: unknown;
}

/** A job not due yet (SQS delays a message by at most 15 minutes): the worker sends it on again until then. */
export type QueuedJob = Job & { dueAt: number };

/** SQS's longest DelaySeconds. */
export const maxDelaySeconds = 900;

/** Receives of a message before SQS moves it to the dead-letter queue (infra/aws/work-queue.ts). */
export const maxReceives = 5;

type Sdk = typeof import('@aws-sdk/client-sqs');
let sdk: Promise<Sdk> | undefined;
let client: SQSClient | undefined;

/**
 * Runs a job in this process without WORK_QUEUE_URL: the local gateways (infra/local) set it to functions/queue/jobs.ts,
 * as the queue worker function runs it in AWS; this module never imports the jobs it carries.
 */
let localRunner: ((job: Job) => Promise<void>) | undefined;
/** Kinds whose jobs due now run together, as a queue worker receives them in one batch, and how. */
let localBatches: { kinds: ReadonlySet<string>; run: (jobs: Job[]) => Promise<void> } | undefined;
export function runJobsLocally(
  runner: (job: Job) => Promise<void>,
  batches?: { kinds: readonly string[]; run: (jobs: Job[]) => Promise<void> },
): void {
  localRunner = runner;
  localBatches = batches && { kinds: new Set(batches.kinds), run: batches.run };
}

/** How long this process gathers the jobs of a batched kind due now before it runs them together. */
const localBatchWindowMs = 20;
/** The jobs of a batched kind gathered so far, by kind, and what each waits on. */
const localBatch = new Map<string, { jobs: Job[]; finished: (() => void)[] }>();

/** Gathers a job due now of a batched kind; the first of a batch arms its run after the window. */
function gatherLocally(job: Job): void {
  let done!: () => void;
  const running = new Promise<void>((resolve) => {
    done = resolve;
  });
  localRunning.add(running);
  void running.finally(() => localRunning.delete(running));
  const gathered = localBatch.get(job.kind);
  if (gathered) {
    gathered.jobs.push(job);
    gathered.finished.push(done);
    return;
  }
  localBatch.set(job.kind, { jobs: [job], finished: [done] });
  const timer = setTimeout(() => {
    localTimers.delete(timer);
    const batch = localBatch.get(job.kind)!;
    localBatch.delete(job.kind);
    const run = localBatches?.run ?? ((jobs: Job[]) => Promise.all(jobs.map(runInProcess)).then(() => undefined));
    void run(batch.jobs)
      .catch((error: unknown) =>
        logger.error('A batch of background jobs failed', { kind: job.kind, error: String(error) }),
      )
      .finally(() => {
        for (const finished of batch.finished) finished();
      });
  }, localBatchWindowMs);
  timer.unref();
  localTimers.set(timer, () => {
    const dropped = localBatch.get(job.kind);
    localBatch.delete(job.kind);
    for (const finished of dropped?.finished ?? []) finished();
  });
}

/**
 * Queues a job to run in `delaySeconds`; never throws (a job that cannot be queued is logged). `queueUrlVariable`
 * names the queue's setting: the work queue's by default, or a queue of its own whose function runs the job
 * (INTEGRITY_QUEUE_URL: the retention worker's, which alone holds the audit-admin login); unset, it runs here.
 */
export async function enqueue(job: Job, delaySeconds = 0, queueUrlVariable = 'WORK_QUEUE_URL'): Promise<void> {
  const queued: QueuedJob = { ...job, dueAt: Date.now() + delaySeconds * 1000 };
  try {
    await send(queued, queueUrlVariable);
  } catch (error) {
    logger.error('Could not queue a background job', { kind: job.kind, error: String(error) });
  }
}

/** The timers of this process's jobs not started yet (no WORK_QUEUE_URL). */
const localTimers = new Map<NodeJS.Timeout, () => void>();

/**
 * Drops the jobs of this process that have not started (no WORK_QUEUE_URL), as stopping the process would: the test
 * files that share one process start each without the jobs an earlier file armed against its own database.
 */
export function dropLocalJobs(): void {
  for (const [timer, dropped] of localTimers) {
    clearTimeout(timer);
    dropped();
  }
  localTimers.clear();
}

/**
 * Where this process keeps its delayed jobs (`npm start`: .data/jobs), so that a restart arms them again; unset (tests),
 * they live in their timers alone. SQS keeps them in AWS.
 */
let localJobsDir: string | undefined;

/**
 * Keeps this process's delayed jobs in `dir` from now on and arms again those a previous process kept there (a job
 * whose time passed meanwhile runs at once: each job rechecks what it was armed for). Answers how many it armed.
 */
export async function keepLocalJobsIn(dir: string): Promise<number> {
  await mkdir(dir, { recursive: true });
  localJobsDir = dir;
  const files = (await readdir(dir)).filter((name) => name.endsWith('.json'));
  for (const name of files) {
    const file = join(dir, name);
    const job = JSON.parse(await readFile(file, 'utf8')) as QueuedJob;
    armLocally(job, file);
  }
  return files.length;
}

/** Runs `job` in this process when it is due; `file`, where it is kept, goes once it ran. */
function armLocally(job: QueuedJob, file?: string): void {
  const { dueAt, ...plain } = job;
  const delayMs = Math.max(0, dueAt - Date.now());
  if (delayMs === 0 && !file && localBatches?.kinds.has(job.kind)) {
    gatherLocally(plain as Job);
    return;
  }
  let finished!: () => void;
  const done = new Promise<void>((resolve) => {
    finished = resolve;
  });
  // A job due now counts as running from the moment it is queued; one armed for later from when it starts.
  const track = () => {
    localRunning.add(done);
    void done.finally(() => localRunning.delete(done));
  };
  if (delayMs === 0) track();
  const timer = setTimeout(() => {
    localTimers.delete(timer);
    if (delayMs > 0) track();
    void runInProcess(plain as Job)
      .then(() => (file ? rm(file, { force: true }).catch(() => undefined) : undefined))
      .finally(finished);
  }, delayMs);
  timer.unref();
  localTimers.set(timer, finished);
}

/** This process's jobs running or due now (no WORK_QUEUE_URL). */
const localRunning = new Set<Promise<unknown>>();

/**
 * Resolves once no job of this process is running or due now, including those they queue in turn: what a test waits
 * for before it counts the statements of its own request. Jobs armed for later are not waited for.
 */
export async function localJobsSettled(): Promise<void> {
  while (localRunning.size > 0) await Promise.allSettled([...localRunning]);
}

/** Sends a queued job on: to SQS with the delay left (at most 15 minutes), or to a timer of this process. */
export async function send(job: QueuedJob, queueUrlVariable = 'WORK_QUEUE_URL'): Promise<void> {
  const delayMs = Math.max(0, job.dueAt - Date.now());
  const queueUrl = process.env[queueUrlVariable];
  if (!queueUrl) {
    // A job due later is kept on disk until it ran; one due now runs before a restart could lose it.
    const file = localJobsDir && delayMs > 1000 ? join(localJobsDir, `${randomUUID()}.json`) : undefined;
    if (file) await writeFile(file, JSON.stringify(job));
    armLocally(job, file);
    return;
  }
  sdk ??= import('@aws-sdk/client-sqs');
  const loaded = await sdk;
  client ??= new loaded.SQSClient({});
  await client.send(
    new loaded.SendMessageCommand({
      QueueUrl: queueUrl,
      MessageBody: JSON.stringify(job),
      DelaySeconds: Math.min(maxDelaySeconds, Math.ceil(delayMs / 1000)),
    }),
  );
}

async function runInProcess(job: Job): Promise<void> {
  try {
    if (!localRunner) throw new Error('No local job runner: start the local gateways (infra/local) first');
    await localRunner(job);
  } catch (error) {
    logger.error('A background job failed', { kind: job.kind, error: String(error) });
  }
}
