import { gzipSync } from 'node:zlib';
import type { ExportFile, FileDelivery } from '../audit/export.ts';
import { DomainError } from '../errors.ts';
import { RawReply } from './route.ts';

/**
 * Lambda caps a synchronous response at 6 MB (the whole payload: status, headers and the body as a JSON
 * string); a body stays under 5.5 MiB, leaving room for the rest.
 */
export const replyBodyBudget = 5.5 * 1024 * 1024;
/** Beyond this much uncompressed text even gzip is not tried: no text worth exporting compresses tenfold, and memory is bounded. */
export const gzipInputBudget = 10 * replyBodyBudget;

/** Bytes a text takes in Lambda's response payload: the body travels as a JSON string, so quotes, backslashes and control characters count escaped. */
export function payloadBytes(text: string): number {
  return Buffer.byteLength(JSON.stringify(text)) - 2;
}

/** Whether an Accept-Encoding header allows gzip (`gzip` or `*`, not refused with q=0). */
export function acceptsGzip(header: string | undefined): boolean {
  return (header ?? '').split(',').some((part) => {
    const [coding, ...params] = part.trim().toLowerCase().split(';');
    const q = params.map((p) => /^\s*q=([\d.]+)\s*$/.exec(p)?.[1]).find((v) => v !== undefined);
    return (coding === 'gzip' || coding === '*') && (q === undefined || Number(q) > 0);
  });
}

/**
 * A file download within Lambda's response cap: as is when it fits; gzip-compressed (base64, content-encoding
 * gzip) when it does not and the client accepts gzip; otherwise 413 PAYLOAD_TOO_LARGE.
 */
export function fileDownload(acceptEncoding: string | undefined): FileDelivery<RawReply> {
  const gzip = acceptsGzip(acceptEncoding);
  return {
    // Beyond this much text the reply cannot fit, even compressed.
    maxBytes: gzip ? gzipInputBudget : replyBodyBudget,
    tooLarge: () => tooLarge(gzip),
    deliver: (file) => downloadReply(file, gzip),
  };
}

function downloadReply(file: ExportFile, gzip: boolean): RawReply {
  const headers = {
    'content-type': file.contentType,
    'content-disposition': `attachment; filename="${file.filename}"`,
    vary: 'accept-encoding',
  };
  const bytes = payloadBytes(file.body);
  if (bytes <= replyBodyBudget) return new RawReply({ statusCode: 200, headers, body: file.body });
  if (gzip && bytes <= gzipInputBudget) {
    const zipped = gzipSync(file.body).toString('base64');
    if (zipped.length <= replyBodyBudget) {
      return new RawReply({
        statusCode: 200,
        headers: { ...headers, 'content-encoding': 'gzip' },
        body: zipped,
        isBase64Encoded: true,
      });
    }
  }
  throw tooLarge(gzip);
}

/** The 413 of a download that cannot fit even compressed (or uncompressed, for a client that takes no gzip). */
function tooLarge(gzip: boolean) {
  return new DomainError(
    'PAYLOAD_TOO_LARGE',
    gzip
      ? 'The file is too large for one reply even compressed; narrow the range (from/to) or the filters'
      : 'The file is too large for one reply; narrow the range (from/to) or the filters, or accept gzip (Accept-Encoding: gzip)',
  );
}
