/**
 * A local S3-compatible endpoint for the real AWS SDK client (path-style): PutObject (with If-None-Match and the
 * Object Lock headers kept), GetObject and ListObjectsV2 (prefix, delimiter). Objects live in memory.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { unchunk } from '#infra/local/aws-chunked.ts';

export interface StoredObject {
  body: Buffer;
  headers: Record<string, string | undefined>;
}

export interface S3Stub {
  url: string;
  /** Objects by `bucket/key`. */
  objects: Map<string, StoredObject>;
  close(): Promise<void>;
}

const xml = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

export async function startS3Stub(): Promise<S3Stub> {
  const objects = new Map<string, StoredObject>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://stub');
      const [bucket, ...rest] = url.pathname.slice(1).split('/');
      const key = decodeURIComponent(rest.join('/'));
      const headers = Object.fromEntries(
        Object.entries(req.headers).map(([name, value]) => [name, Array.isArray(value) ? value[0] : value]),
      );
      if (req.method === 'PUT' && key) {
        const id = `${bucket}/${key}`;
        if (headers['if-none-match'] === '*' && objects.has(id)) {
          res.writeHead(412, { 'content-type': 'application/xml' });
          res.end(
            '<Error><Code>PreconditionFailed</Code><Message>At least one of the pre-conditions you specified did not hold</Message></Error>',
          );
          return;
        }
        const raw = Buffer.concat(chunks);
        const chunked = (headers['content-encoding'] ?? '').includes('aws-chunked');
        objects.set(id, { body: chunked ? unchunk(raw) : raw, headers });
        res.writeHead(200, { etag: '"stub"' }).end();
        return;
      }
      if (req.method === 'GET' && key) {
        const object = objects.get(`${bucket}/${key}`);
        if (!object) {
          res.writeHead(404, { 'content-type': 'application/xml' });
          res.end('<Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message></Error>');
          return;
        }
        res.writeHead(200, { 'content-type': object.headers['content-type'] ?? 'application/octet-stream' });
        res.end(object.body);
        return;
      }
      if (req.method === 'GET' && url.searchParams.get('list-type') === '2') {
        const prefix = url.searchParams.get('prefix') ?? '';
        const delimiter = url.searchParams.get('delimiter');
        const keys = [...objects.keys()]
          .filter((id) => id.startsWith(`${bucket}/`))
          .map((id) => id.slice(bucket!.length + 1))
          .filter((name) => name.startsWith(prefix))
          .sort();
        const common = new Set<string>();
        const contents: string[] = [];
        for (const name of keys) {
          const cut = delimiter ? name.indexOf(delimiter, prefix.length) : -1;
          if (cut >= 0) common.add(name.slice(0, cut + 1));
          else contents.push(name);
        }
        res.writeHead(200, { 'content-type': 'application/xml' });
        res.end(
          `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><Name>${bucket}</Name><Prefix>${xml(prefix)}</Prefix>` +
            `<KeyCount>${contents.length + common.size}</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated>` +
            contents.map((name) => `<Contents><Key>${xml(name)}</Key><Size>1</Size></Contents>`).join('') +
            [...common].map((name) => `<CommonPrefixes><Prefix>${xml(name)}</Prefix></CommonPrefixes>`).join('') +
            '</ListBucketResult>',
        );
        return;
      }
      res.writeHead(400).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    objects,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
