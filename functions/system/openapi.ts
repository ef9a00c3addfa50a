import type { buildOpenApi } from '#shared/http/openapi.ts';
import { routeTable } from './route-table.ts';

const documents = new Map<string, ReturnType<typeof buildOpenApi>>();

/** The document names the origin it was asked at as its server (API Gateway's domain, or the local gateway's). */
export function servedOpenApi(headers: Record<string, string | undefined>): ReturnType<typeof buildOpenApi> {
  const proto = headers['x-forwarded-proto'] === 'http' ? 'http' : 'https';
  const host = headers.host ?? '';
  const url = /^[a-z0-9.-]+(?::\d{1,5})?$/i.test(host) ? `${proto}://${host}` : '/';
  let document = documents.get(url);
  if (!document) {
    document = {
      ...routeTable().document(),
      servers: [{ url, description: 'This API (the paths begin with /api/v1)' }],
    };
    // One document per origin; a stage has one or two (its API Gateway domain and a custom one).
    if (documents.size < 8) documents.set(url, document);
  }
  return document;
}
