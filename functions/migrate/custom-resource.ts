/**
 * A CloudFormation custom resource served by a plain Lambda (no provider framework): the Lambda answers
 * CloudFormation itself at the request's ResponseURL, SUCCESS with the resource's attributes or FAILED with the
 * reason, so a failure stops the deploy instead of leaving it waiting. It answers on every path: a Delete at once,
 * an error with FAILED, and work that would outlast the Lambda's timeout with FAILED shortly before it (a function
 * that times out answers nothing, and CloudFormation would wait for the resource's service timeout).
 */
import type { CloudFormationCustomResourceEvent, CloudFormationCustomResourceUpdateEvent, Context } from 'aws-lambda';
import { logger } from '#shared/logger.ts';

export interface CustomResourceOutcome {
  reason: string;
  /** The resource's attributes (Fn::GetAtt). */
  data?: Record<string, string>;
}

export interface CustomResourceOptions {
  /** The physical id of the one resource this Lambda serves. */
  physicalResourceId: string;
  /** Create and Update (every deploy whose properties changed). */
  apply: (event: CloudFormationCustomResourceEvent) => Promise<CustomResourceOutcome>;
  /** What a Delete answers: it changes nothing, since what the resource made outlives the stack's update. */
  onDelete: string;
  /**
   * Whether an Update is CloudFormation rolling a failed deploy back. A rollback that fails leaves the stack in
   * UPDATE_ROLLBACK_FAILED, which only an operator can resolve: there a failure is logged and answered SUCCESS.
   */
  isRollback?: (event: CloudFormationCustomResourceUpdateEvent) => boolean;
}

/** The largest reply CloudFormation accepts from a custom resource. */
export const maxReplyBytes = 4_096;

/** The answer is sent this long before the Lambda's deadline when the work has not finished by then. */
export const answerMarginMs = 15_000;

/** A required setting of the function's environment. */
export function setting(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
}

async function respond(
  event: CloudFormationCustomResourceEvent,
  physicalResourceId: string,
  status: 'SUCCESS' | 'FAILED',
  outcome: CustomResourceOutcome,
): Promise<void> {
  const reply = {
    Status: status,
    Reason: '',
    PhysicalResourceId: 'PhysicalResourceId' in event ? event.PhysicalResourceId : physicalResourceId,
    StackId: event.StackId,
    RequestId: event.RequestId,
    LogicalResourceId: event.LogicalResourceId,
    Data: outcome.data ?? {},
  };
  // CloudFormation refuses a reply above 4,096 bytes: the reason is cut to what leaves room (escaping included).
  let room = Math.max(0, maxReplyBytes - Buffer.byteLength(JSON.stringify(reply)));
  let body = JSON.stringify({ ...reply, Reason: outcome.reason.slice(0, room) });
  while (Buffer.byteLength(body) > maxReplyBytes && room > 0) {
    room = Math.floor(room / 2);
    body = JSON.stringify({ ...reply, Reason: outcome.reason.slice(0, room) });
  }
  const answer = await fetch(event.ResponseURL, { method: 'PUT', body, headers: { 'content-type': '' } });
  if (!answer.ok) throw new Error(`CloudFormation refused the response: ${answer.status}`);
}

/** `work`, or a rejection once `budgetMs` have passed (no limit without a budget: outside Lambda). */
async function withinBudget<T>(work: Promise<T>, budgetMs: number | undefined): Promise<T> {
  if (budgetMs === undefined) return work;
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`not finished ${answerMarginMs / 1000} s before the Lambda timeout`)),
      Math.max(budgetMs, 0),
    );
  });
  try {
    return await Promise.race([work, expired]);
  } finally {
    clearTimeout(timer);
  }
}

/** The Lambda handler of a custom resource. */
export function customResource(options: CustomResourceOptions) {
  return async (
    event: CloudFormationCustomResourceEvent,
    context: Pick<Context, 'logStreamName'> & Partial<Pick<Context, 'getRemainingTimeInMillis'>>,
  ): Promise<void> => {
    if (event.RequestType === 'Delete')
      return respond(event, options.physicalResourceId, 'SUCCESS', { reason: options.onDelete });
    const rollback = event.RequestType === 'Update' && (options.isRollback?.(event) ?? false);
    const remainingMs = context.getRemainingTimeInMillis?.();
    let outcome: CustomResourceOutcome;
    try {
      outcome = await withinBudget(
        options.apply(event),
        remainingMs === undefined ? undefined : remainingMs - answerMarginMs,
      );
    } catch (error) {
      const reason = `${error instanceof Error ? error.message : String(error)} (log stream ${context.logStreamName})`;
      logger.error(`${event.ResourceType} failed${rollback ? ' during a rollback' : ''}`, error as Error);
      if (rollback)
        return respond(event, options.physicalResourceId, 'SUCCESS', {
          reason: `Rolled back without this step: ${reason}`,
        });
      return respond(event, options.physicalResourceId, 'FAILED', { reason });
    }
    logger.info(`${event.ResourceType} applied`, { reason: outcome.reason });
    await respond(event, options.physicalResourceId, 'SUCCESS', outcome);
  };
}
