import type { RouteDef } from '#shared/http/route.ts';

/** The keys (as paths: data.0.name) of `sent` that `read`, the schema's output, dropped: fields the schema does not declare. */
function undeclaredKeys(sent: unknown, read: unknown, path: string): string[] {
  if (Array.isArray(sent) && Array.isArray(read))
    return sent.flatMap((item, i) => undeclaredKeys(item, read[i], `${path}${i}.`));
  if (isObject(sent) && isObject(read))
    return Object.entries(sent).flatMap(([key, value]) =>
      key in read ? undeclaredKeys(value, read[key], `${path}${key}.`) : [`${path}${key}`],
    );
  return [];
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/**
 * Holds a 2xx reply to its route's document: the route's status, and a JSON body that its `response` schema reads
 * with nothing left over (a zod object drops unknown keys; here one fails, as the document's
 * `additionalProperties: false` says). Throws naming the route and what differs.
 */
export function checkReply(routeKey: string, route: RouteDef, status: number, body: unknown): void {
  const fail = (what: string) => {
    throw new Error(`${routeKey} answered outside its document: ${what}\n${JSON.stringify(body, null, 2)}`);
  };
  if (status !== (route.status ?? 200)) fail(`status ${status}, documented ${route.status ?? 200}`);
  if (!route.response || body === undefined) return;
  const parsed = route.response.safeParse(body);
  if (!parsed.success)
    fail(parsed.error.issues.map((issue) => `${issue.path.join('.') || '(body)'}: ${issue.message}`).join('; '));
  const extra = undeclaredKeys(body, parsed.data, '');
  if (extra.length > 0) fail(`fields the schema does not declare: ${extra.join(', ')}`);
}
