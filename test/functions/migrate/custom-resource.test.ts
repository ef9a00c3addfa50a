/**
 * How the custom resources answer CloudFormation (functions/migrate/custom-resource.ts) on the paths where a Lambda
 * could otherwise leave a deploy waiting: work that outlasts the function's timeout.
 */
import type { CloudFormationCustomResourceEvent } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { answerMarginMs, customResource, maxReplyBytes } from '#functions/migrate/custom-resource.ts';
import { type Stubs, startStubs } from '#test/support/aws-stubs.ts';

let stubs: Stubs;

beforeAll(async () => {
  stubs = await startStubs({}, {});
});

afterAll(() => stubs?.close());

const event = (RequestType: 'Create' | 'Update') =>
  ({
    RequestType,
    ServiceToken: 'arn:aws:lambda:us-east-1:123456789012:function:resource',
    ResponseURL: stubs.responseUrl,
    StackId: 'arn:aws:cloudformation:us-east-1:123456789012:stack/Logbook/1',
    RequestId: `request-${stubs.responses.length}`,
    ResourceType: 'Custom::Example',
    LogicalResourceId: 'Example',
    ...(RequestType === 'Update' && { PhysicalResourceId: 'example', OldResourceProperties: { ServiceToken: 'x' } }),
    ResourceProperties: { ServiceToken: 'x' },
  }) as CloudFormationCustomResourceEvent;

/** A Lambda context with this much time left. */
const context = (remainingMs: number) => ({
  logStreamName: '2026/11/21/[$LATEST]abc',
  getRemainingTimeInMillis: () => remainingMs,
});

describe('a custom resource', () => {
  it('answers FAILED before the Lambda timeout when its work has not finished, instead of leaving the deploy waiting', async () => {
    const handler = customResource({
      physicalResourceId: 'example',
      onDelete: 'kept',
      apply: () => new Promise(() => {}),
    });
    const started = Date.now();
    await handler(event('Create'), context(answerMarginMs + 200));
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(stubs.responses.at(-1)).toMatchObject({
      Status: 'FAILED',
      PhysicalResourceId: 'example',
      Reason: expect.stringContaining('before the Lambda timeout'),
    });
  });

  it('answers SUCCESS when its work finishes in time', async () => {
    const handler = customResource({
      physicalResourceId: 'example',
      onDelete: 'kept',
      apply: async () => ({ reason: 'done', data: { value: '1' } }),
    });
    await handler(event('Update'), context(60_000));
    expect(stubs.responses.at(-1)).toMatchObject({
      Status: 'SUCCESS',
      PhysicalResourceId: 'example',
      Reason: 'done',
      Data: { value: '1' },
    });
  });

  it('keeps its reply to CloudFormation within 4,096 bytes, however long the reason', async () => {
    const handler = customResource({
      physicalResourceId: 'example',
      onDelete: 'kept',
      apply: async () => {
        throw new Error(`"quoted" and \\ escaped ${'é'.repeat(2_100)}`);
      },
    });
    await handler(event('Update'), context(60_000));
    const reply = stubs.responses.at(-1)!;
    expect(reply).toMatchObject({ Status: 'FAILED', Reason: expect.stringMatching(/^"quoted" and/) });
    expect(Buffer.byteLength(JSON.stringify(reply))).toBeLessThanOrEqual(maxReplyBytes);
    expect(Buffer.byteLength(JSON.stringify(reply))).toBeGreaterThan(maxReplyBytes / 2);
  });
});
