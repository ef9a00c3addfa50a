/**
 * A CloudFormation custom resource served by a plain Lambda (no provider framework): the Lambda answers
 * CloudFormation itself at the request's ResponseURL, SUCCESS with the resource's attributes or FAILED with the
 * reason, so a failure stops the deploy instead of leaving it waiting an hour.
 */
import type { CloudFormationCustomResourceEvent, Context } from 'aws-lambda';
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
}

/** A required setting of the function's environment. */
export function setting(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
}

async function respond(event: CloudFormationCustomResourceEvent, physicalResourceId: string, status: 'SUCCESS' | 'FAILED', outcome: CustomResourceOutcome): Promise<void> {
  const body = JSON.stringify({
    Status: status,
    Reason: outcome.reason.slice(0, 3_000),
    PhysicalResourceId: 'PhysicalResourceId' in event ? event.PhysicalResourceId : physicalResourceId,
    StackId: event.StackId,
    RequestId: event.RequestId,
    LogicalResourceId: event.LogicalResourceId,
    Data: outcome.data ?? {},
  });
  const reply = await fetch(event.ResponseURL, { method: 'PUT', body, headers: { 'content-type': '' } });
  if (!reply.ok) throw new Error(`CloudFormation refused the response: ${reply.status}`);
}

/** The Lambda handler of a custom resource. */
export function customResource(options: CustomResourceOptions) {
  return async (event: CloudFormationCustomResourceEvent, context: Pick<Context, 'logStreamName'>): Promise<void> => {
    if (event.RequestType === 'Delete') return respond(event, options.physicalResourceId, 'SUCCESS', { reason: options.onDelete });
    let outcome: CustomResourceOutcome;
    try {
      outcome = await options.apply(event);
    } catch (error) {
      logger.error(`${event.ResourceType} failed`, error as Error);
      return respond(event, options.physicalResourceId, 'FAILED', { reason: `${error instanceof Error ? error.message : String(error)} (log stream ${context.logStreamName})` });
    }
    logger.info(`${event.ResourceType} applied`, { reason: outcome.reason });
    await respond(event, options.physicalResourceId, 'SUCCESS', outcome);
  };
}
