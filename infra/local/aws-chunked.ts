/**
 * The body of a request the AWS SDK sent with `content-encoding: aws-chunked` (its checksummed puts): the chunks' data
 * without their framing. What the local S3-compatible stand-ins (the tests' stub, the streaming benchmark's
 * receiver) read a PutObject's body with.
 */
export function unchunk(raw: Buffer): Buffer {
  const parts: Buffer[] = [];
  for (let at = 0; ; ) {
    const lineEnd = raw.indexOf('\r\n', at);
    const size = Number.parseInt(raw.subarray(at, lineEnd).toString('ascii').split(';')[0]!, 16);
    if (!size) break;
    parts.push(raw.subarray(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
  return Buffer.concat(parts);
}
