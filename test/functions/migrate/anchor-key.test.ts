/**
 * The anchor signing key's custom resource (functions/migrate/anchor-key.ts): it writes a new Ed25519 private key into
 * the secret it may only write, and answers the matching public key for the audit function to publish.
 */
import { createPrivateKey, createPublicKey } from 'node:crypto';
import type { CloudFormationCustomResourceEvent, Context } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handler } from '#functions/migrate/anchor-key.ts';
import { type AnchorFields, anchorKeyId, signAnchor, verifyAnchorSignature } from '#shared/audit/anchor-signing.ts';
import { type Stubs, startStubs } from '#test/support/aws-stubs.ts';

const keySecret = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:anchor-key-AbCdEf';
const saved = { ...process.env };
let stubs: Stubs;

beforeAll(async () => {
  stubs = await startStubs({ [keySecret]: 'placeholder' }, { [keySecret]: ['PutSecretValue'] });
  Object.assign(process.env, {
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'local',
    AWS_SECRET_ACCESS_KEY: 'local',
    AWS_ENDPOINT_URL_SECRETS_MANAGER: stubs.secretsManagerUrl,
    AUDIT_ANCHOR_PRIVATE_KEY_SECRET_ARN: keySecret,
  });
});

afterAll(() => {
  process.env = saved;
  stubs?.close();
});

const event = (RequestType: 'Create' | 'Update' | 'Delete', generation: string) =>
  ({
    RequestType,
    ServiceToken: 'arn:aws:lambda:us-east-1:123456789012:function:anchor-key',
    ResponseURL: stubs.responseUrl,
    StackId: 'arn:aws:cloudformation:us-east-1:123456789012:stack/Logbook/1',
    RequestId: `request-${stubs.responses.length}`,
    ResourceType: 'Custom::LogbookAnchorKey',
    LogicalResourceId: 'AnchorKeyPair',
    ...(RequestType !== 'Create' && {
      PhysicalResourceId: 'logbook-anchor-key',
      OldResourceProperties: { ServiceToken: 'x', generation: '1', secretArn: keySecret },
    }),
    ResourceProperties: { ServiceToken: 'x', generation, secretArn: keySecret },
  }) as CloudFormationCustomResourceEvent;

const context = { logStreamName: '2026/11/21/[$LATEST]abc' } as Context;

const fields: AnchorFields = {
  orgId: '00000000-0000-4000-8000-000000000001',
  seq: 3,
  checksum: 'ab'.repeat(32),
  firstRetainedSeq: 1,
  boundaryChecksum: null,
  orgCount: 1,
  orgsDigest: 'cd'.repeat(32),
  anchoredAt: '2026-11-21T03:15:00.000Z',
  keyId: '',
};

describe('the anchor key custom resource', () => {
  let first: { publicKey: string; keyId: string };

  it('writes a new Ed25519 private key into its secret and answers the public key that verifies what it signs', async () => {
    await handler(event('Create', '1'), context);
    const reply = stubs.responses.at(-1)!;
    expect(reply).toMatchObject({
      Status: 'SUCCESS',
      PhysicalResourceId: 'logbook-anchor-key',
      Data: { publicKey: expect.stringContaining('BEGIN PUBLIC KEY'), keyId: expect.stringMatching(/^[0-9a-f]{16}$/) },
    });
    first = reply.Data;
    const privateKey = createPrivateKey(stubs.secrets.get(keySecret)!);
    expect(privateKey.asymmetricKeyType).toBe('ed25519');
    const publicKey = createPublicKey(first.publicKey);
    expect(anchorKeyId(publicKey)).toBe(first.keyId);
    const anchor = { ...fields, keyId: first.keyId };
    expect(verifyAnchorSignature({ ...anchor, signature: signAnchor(anchor, privateKey) }, publicKey)).toBe(true);
    expect(stubs.calls.every((call) => call.operation === 'PutSecretValue')).toBe(true);
  });

  it('rotates the pair on an update (a new anchorKeyGeneration)', async () => {
    await handler(event('Update', '2'), context);
    const reply = stubs.responses.at(-1)!;
    expect(reply.Status).toBe('SUCCESS');
    expect(reply.Data.keyId).not.toBe(first.keyId);
    expect(anchorKeyId(createPrivateKey(stubs.secrets.get(keySecret)!))).toBe(reply.Data.keyId);
  });

  it('leaves the key alone when the resource is deleted', async () => {
    const writes = stubs.calls.length;
    await handler(event('Delete', '2'), context);
    expect(stubs.responses.at(-1)).toMatchObject({ Status: 'SUCCESS' });
    expect(stubs.calls).toHaveLength(writes);
  });

  it('answers FAILED when it cannot write the key, so the deploy stops', async () => {
    process.env.AUDIT_ANCHOR_PRIVATE_KEY_SECRET_ARN =
      'arn:aws:secretsmanager:us-east-1:123456789012:secret:other-AbCdEf';
    try {
      await handler(event('Update', '3'), context);
    } finally {
      process.env.AUDIT_ANCHOR_PRIVATE_KEY_SECRET_ARN = keySecret;
    }
    expect(stubs.responses.at(-1)).toMatchObject({
      Status: 'FAILED',
      Reason: expect.stringContaining('AccessDenied'),
      Data: {},
    });
  });
});
