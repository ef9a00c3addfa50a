import { join } from 'node:path';
import { Duration } from 'aws-cdk-lib';
import type { IGrantable } from 'aws-cdk-lib/aws-iam';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import type { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { heartbeatBatch, heartbeatQueueVariable } from '#shared/agents/online.ts';
import { maxReceives } from '#shared/queue/work-queue.ts';
import { LogbookFunction, projectRoot } from './functions.ts';
import { acknowledge } from './nag.ts';

export interface WorkQueueProps {
  logRetention: RetentionDays;
  /** The worker's settings: the app database's and the agent channel's management endpoint. */
  environment: Record<string, string>;
}

/**
 * The service's background work (shared/queue/work-queue.ts): script runs waiting for an agent that just connected,
 * PSA deliveries with their retries, and audit rows whose write failed (shared/audit/spool.ts). An SQS queue and a worker function polled by Lambda's event
 * source mapping: nothing is billed while no job is queued. A second queue carries the heartbeats agents send on their
 * connections, which the same worker records in batches. A job that keeps failing ends in the dead-letter queue
 * after five receives; its delivery row still says where it stood.
 */
export class WorkQueue extends Construct {
  readonly queue: Queue;
  /** The heartbeats of agents' connections, received in batches. */
  readonly heartbeats: Queue;
  readonly worker: LogbookFunction;

  constructor(scope: Construct, id: string, props: WorkQueueProps) {
    super(scope, id);
    const deadLetters = new Queue(this, 'DeadLetters', {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    acknowledge(deadLetters, 'SQS3', 'This is the dead-letter queue of the work queue');
    this.queue = new Queue(this, 'Queue', {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      // Six times the worker's timeout, as Lambda's SQS event source asks.
      visibilityTimeout: Duration.minutes(6),
      deadLetterQueue: { queue: deadLetters, maxReceiveCount: maxReceives },
    });
    this.worker = new LogbookFunction(scope, 'WorkQueueWorker', {
      entry: join(projectRoot, 'functions/queue/worker.ts'),
      description:
        'Logbook: the work queue worker (script runs for agents that connect, PSA deliveries, audit replays)',
      timeout: Duration.minutes(1),
      logRetention: props.logRetention,
      environment: { ...props.environment, WORK_QUEUE_URL: this.queue.queueUrl },
    });
    this.worker.addEventSource(
      new SqsEventSource(this.queue, { batchSize: 10, maxConcurrency: 5, reportBatchItemFailures: true }),
    );
    this.queue.grantSendMessages(this.worker);
    // Heartbeats carried by agents' connections: received in batches of up to 100 gathered for up to 5 seconds, so
    // that one run records many devices' heartbeats in a few statements (shared/monitoring/heartbeat-message.ts).
    this.heartbeats = new Queue(this, 'Heartbeats', {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      visibilityTimeout: Duration.minutes(6),
      deadLetterQueue: { queue: deadLetters, maxReceiveCount: maxReceives },
    });
    this.worker.addEventSource(
      new SqsEventSource(this.heartbeats, {
        batchSize: heartbeatBatch.size,
        maxBatchingWindow: Duration.seconds(heartbeatBatch.windowSeconds),
        maxConcurrency: 2,
        reportBatchItemFailures: true,
      }),
    );
  }

  /** Lets a function queue jobs (WORK_QUEUE_URL in its settings). */
  grantSend(fn: IGrantable & { addEnvironment(key: string, value: string): unknown }): void {
    this.queue.grantSendMessages(fn);
    fn.addEnvironment('WORK_QUEUE_URL', this.queue.queueUrl);
  }

  /** Lets the function of agents' connections queue their heartbeats (HEARTBEAT_QUEUE_URL in its settings). */
  grantHeartbeats(fn: IGrantable & { addEnvironment(key: string, value: string): unknown }): void {
    this.heartbeats.grantSendMessages(fn);
    fn.addEnvironment(heartbeatQueueVariable, this.heartbeats.queueUrl);
  }
}
