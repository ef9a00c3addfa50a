import { describe, expect, it } from 'vitest';
import { routes } from '#functions/routes.ts';
import { routeMatcher } from '#infra/local/http-gateway.ts';
import { checkReply } from '#test/support/reply-schema.ts';

const route = routes['GET /api/v1/orgs/organizations/{id}'];
const organization = {
  id: '6f1c2f38-53a4-4fd4-9c3b-2f2c3c1b7a10',
  partnerId: '0d6d5f0e-8d8e-4a57-8b0e-2f1f3b9c4e21',
  name: 'Acme',
  externalId: null,
  createdAt: '2026-03-01T10:00:00.123Z',
  updatedAt: '2026-03-01T10:00:00.123Z',
};
const check = (status: number, body: unknown) => () =>
  checkReply('GET /api/v1/orgs/organizations/{id}', route, status, body);

describe('the end-to-end client holds every 2xx reply to its route', () => {
  it('finds the route API Gateway would choose for a concrete path', () => {
    const routeOf = routeMatcher(Object.keys(routes));
    expect(routeOf('GET', '/api/v1/devices/d1/eventlogs')).toBe('GET /api/v1/devices/{id}/eventlogs');
    expect(routeOf('GET', '/api/v1/devices/d1/eventlogs/System')).toBe('GET /api/v1/devices/{id}/eventlogs/{name}');
    expect(routeOf('get', '/api/v1/audit-logs/search')).toBe('GET /api/v1/audit-logs/search');
    expect(routeOf('POST', '/api/v1/devices/d1')).toBeUndefined();
  });

  it('passes a reply its schema describes', () => {
    expect(check(200, organization)).not.toThrow();
  });

  it('fails a field the schema does not declare, naming it', () => {
    expect(check(200, { ...organization, deletedAt: null })).toThrow(/does not declare: deletedAt/);
  });

  it('fails a missing field or a value of another type', () => {
    const { name: _, ...nameless } = organization;
    expect(check(200, nameless)).toThrow(/name: /);
    expect(check(200, { ...organization, createdAt: '2026-03-01 10:00' })).toThrow(/createdAt: /);
  });

  it('fails a status other than the documented one', () => {
    expect(check(201, organization)).toThrow(/status 201, documented 200/);
  });
});
