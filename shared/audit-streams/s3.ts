/**
 * The one adapter of the S3 client (each AWS SDK client has one module): S3 destinations of audit streams (gzipped
 * NDJSON objects per organization and hour, direct puts) and the S3 witness of anchors (Object Lock in compliance
 * mode). AUDIT_S3_ENDPOINT points both at another S3-compatible endpoint (path-style; local development and tests).
 */
import { promisify } from 'node:util';
import { gzip as gzipCallback } from 'node:zlib';
import type { S3Client } from '@aws-sdk/client-s3';
import type { WitnessStore } from './witness-store.ts';

/** Compressed on libuv's threads, so other deliveries of the process go on meanwhile. */
const gzip = promisify(gzipCallback);

type Sdk = typeof import('@aws-sdk/client-s3');
let sdk: Promise<Sdk> | undefined;
let client: { endpoint: string | undefined; client: S3Client } | undefined;

async function s3(): Promise<{ loaded: Sdk; client: S3Client }> {
  sdk ??= import('@aws-sdk/client-s3');
  const loaded = await sdk;
  const endpoint = process.env.AUDIT_S3_ENDPOINT || undefined;
  if (!client || client.endpoint !== endpoint) {
    const made = new loaded.S3Client({
      ...(endpoint && { endpoint, forcePathStyle: true }),
      region: process.env.AWS_REGION || 'us-east-1',
    });
    client = { endpoint, client: made };
  }
  return { loaded, client: client.client };
}

/** How long a witnessed anchor is locked (AUDIT_WITNESS_RETENTION_DAYS, default 400). */
const retentionDays = () => Number(process.env.AUDIT_WITNESS_RETENTION_DAYS) || 400;

const joinKey = (prefix: string, key: string) => (prefix ? `${prefix.replace(/\/+$/, '')}/${key}` : key);

/**
 * The S3 witness: each anchor one object, put only if absent, locked in compliance mode until its retention ends
 * (nobody, the account's root included, can delete or overwrite it before then).
 */
export function s3WitnessStore(bucket: string, prefix: string): WitnessStore {
  return {
    location: `s3://${bucket}/${prefix}`,
    async put(key, body) {
      const { loaded, client } = await s3();
      await client.send(
        new loaded.PutObjectCommand({
          Bucket: bucket,
          Key: joinKey(prefix, key),
          Body: body,
          ContentType: 'application/json',
          IfNoneMatch: '*',
          ObjectLockMode: 'COMPLIANCE',
          ObjectLockRetainUntilDate: new Date(Date.now() + retentionDays() * 86_400_000),
          ChecksumAlgorithm: 'SHA256',
        }),
      );
    },
    async list(under) {
      const { loaded, client } = await s3();
      const keys: string[] = [];
      let token: string | undefined;
      const from = joinKey(prefix, under);
      do {
        const page = await client.send(
          new loaded.ListObjectsV2Command({
            Bucket: bucket,
            Prefix: under === '' ? (prefix ? `${prefix.replace(/\/+$/, '')}/` : '') : from,
            ...(under === '' && { Delimiter: '/' }),
            ContinuationToken: token,
          }),
        );
        const strip = (key: string) => key.slice(prefix ? prefix.replace(/\/+$/, '').length + 1 : 0);
        if (under === '')
          for (const common of page.CommonPrefixes ?? []) keys.push(strip(common.Prefix!).replace(/\/$/, ''));
        else for (const object of page.Contents ?? []) keys.push(strip(object.Key!));
        token = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (token);
      return keys.sort();
    },
    async get(key) {
      const { loaded, client } = await s3();
      const object = await client.send(new loaded.GetObjectCommand({ Bucket: bucket, Key: joinKey(prefix, key) }));
      return object.Body!.transformToString('utf8');
    },
  };
}

/**
 * Puts a batch of an organization's NDJSON lines as gzipped objects, one per hour of the rows' time:
 * `<prefix>/<orgId>/<YYYY>/<MM>/<DD>/<HH>/<firstSeq>-<lastSeq>.ndjson.gz` for the audit trail, with the stream's
 * name after the organization for the logs (`<orgId>/device-events/…`, by their ordering key). A retried batch puts the
 * same keys again, so a receiver reading the bucket sees each row once per key.
 */
export async function putNdjsonObjects(
  endpoint: string,
  orgId: string,
  lines: { hour: string; firstSeq: number; lastSeq: number; lines: string[] }[],
  stream = 'audit',
): Promise<void> {
  const [bucket, ...rest] = endpoint.split('/');
  const prefix = rest.join('/');
  const { loaded, client } = await s3();
  for (const group of lines) {
    const folder = stream === 'audit' ? orgId : `${orgId}/${stream}`;
    const key = joinKey(prefix, `${folder}/${group.hour}/${group.firstSeq}-${group.lastSeq}.ndjson.gz`);
    await client.send(
      new loaded.PutObjectCommand({
        Bucket: bucket,
        Key: key,
        Body: await gzip(`${group.lines.join('\n')}\n`),
        ContentType: 'application/x-ndjson',
        ContentEncoding: 'gzip',
      }),
    );
  }
}
