import { afterEach, describe, expect, it } from 'vitest';
import { clientIp } from '#shared/client-ip.ts';

afterEach(() => {
  delete process.env.TRUST_PROXY_HEADERS;
});

const proxied = {
  'cf-connecting-ip': '203.0.113.9',
  'x-forwarded-for': '198.51.100.1, 10.0.0.1',
  'x-real-ip': '192.0.2.4',
};

describe('the client IP', () => {
  it("is the connection's source IP when proxy headers are not trusted", () => {
    expect(clientIp(proxied, '192.0.2.200')).toBe('192.0.2.200');
  });

  it("is taken from cf-connecting-ip, then x-forwarded-for's first entry, then x-real-ip when proxy headers are trusted", () => {
    process.env.TRUST_PROXY_HEADERS = 'true';
    expect(clientIp(proxied, '192.0.2.200')).toBe('203.0.113.9');
    expect(clientIp({ 'x-forwarded-for': '198.51.100.1, 10.0.0.1', 'x-real-ip': '192.0.2.4' }, '192.0.2.200')).toBe(
      '198.51.100.1',
    );
    expect(clientIp({ 'x-real-ip': '2001:db8::1' }, '192.0.2.200')).toBe('2001:db8::1');
    expect(clientIp({}, '192.0.2.200')).toBe('192.0.2.200');
  });

  it('is not stored when the value is not an IP or is longer than 45 characters', () => {
    process.env.TRUST_PROXY_HEADERS = 'true';
    expect(clientIp({ 'x-real-ip': 'not-an-ip' }, '192.0.2.200')).toBeNull();
    expect(clientIp({ 'x-real-ip': `${'1'.repeat(50)}` }, '192.0.2.200')).toBeNull();
    expect(clientIp({}, 'garbage')).toBeNull();
  });
});
