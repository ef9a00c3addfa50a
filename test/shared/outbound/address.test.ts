import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  addressProblem,
  checkDestination,
  configurationProblem,
  OutboundRefused,
  urlProblem,
  useResolver,
} from '#shared/outbound/address.ts';
import { postOutbound } from '#shared/outbound/request.ts';

afterEach(() => {
  useResolver();
  delete process.env.OUTBOUND_ALLOW_LOOPBACK;
  delete process.env.AWS_LAMBDA_FUNCTION_NAME;
});

/** A resolver that answers each name with the given addresses, and counts its calls. */
function stubResolver(answers: Record<string, string[]>) {
  const calls: string[] = [];
  useResolver(async (name) => {
    calls.push(name);
    const addresses = answers[name];
    if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
    return addresses;
  });
  return calls;
}

const refusedAddresses: [string, string][] = [
  ['127.0.0.1', 'loopback address'],
  ['127.255.0.9', 'loopback address'],
  ['::1', 'loopback address'],
  ['169.254.169.254', 'link-local address'],
  ['fe80::1', 'link-local address'],
  ['10.0.0.1', 'private address'],
  ['172.16.0.1', 'private address'],
  ['172.31.255.254', 'private address'],
  ['192.168.1.1', 'private address'],
  ['fd00::1', 'private address'],
  ['fc00::1', 'private address'],
  ['fec0::1', 'private address'],
  ['100.64.0.1', 'shared address'],
  ['100.127.255.254', 'shared address'],
  ['224.0.0.1', 'multicast address'],
  ['ff02::1', 'multicast address'],
  ['0.0.0.0', 'unspecified address'],
  ['0.1.2.3', 'unspecified address'],
  ['::', 'unspecified address'],
  ['255.255.255.255', 'broadcast address'],
  ['192.0.2.10', 'reserved address'],
  ['198.51.100.7', 'reserved address'],
  ['203.0.113.5', 'reserved address'],
  ['198.18.0.1', 'reserved address'],
  ['240.0.0.1', 'reserved address'],
  ['2001:db8::1', 'reserved address'],
  ['::ffff:169.254.169.254', 'link-local address'],
  ['::ffff:127.0.0.1', 'loopback address'],
  ['::ffff:10.1.2.3', 'private address'],
  ['::ffff:a9fe:a9fe', 'link-local address'],
  ['64:ff9b::169.254.169.254', 'link-local address'],
  ['64:ff9b::10.0.0.1', 'private address'],
  ['64:ff9b::7f00:1', 'loopback address'],
  ['64:ff9b:1::a00:1', 'private address'],
  // ipaddr.js reads ::a.b.c.d as IPv4-mapped; the hexadecimal IPv4-compatible form is reserved.
  ['::10.0.0.1', 'private address'],
  ['::a00:1', 'reserved address'],
  ['2002:a9fe:a9fe::1', 'reserved address'],
];

describe('addressProblem', () => {
  it.each(refusedAddresses)('refuses %s as a %s', (address, reason) => {
    expect(addressProblem(address)).toBe(reason);
  });

  it.each([
    '93.184.215.14',
    '8.8.8.8',
    '172.32.0.1',
    '100.128.0.1',
    '2606:4700::1111',
    '::ffff:8.8.8.8',
    '64:ff9b::8.8.8.8',
  ])('takes the public address %s', (address) => {
    expect(addressProblem(address)).toBeUndefined();
  });

  it('allows loopback only under the local-development allowance, and never inside Lambda', () => {
    process.env.OUTBOUND_ALLOW_LOOPBACK = 'true';
    expect(addressProblem('127.0.0.1')).toBeUndefined();
    expect(addressProblem('::1')).toBeUndefined();
    expect(addressProblem('169.254.169.254')).toBe('link-local address');
    process.env.AWS_LAMBDA_FUNCTION_NAME = 'logbook-alerts';
    expect(addressProblem('127.0.0.1')).toBe('loopback address');
  });
});

describe('urlProblem', () => {
  it.each([
    ['https://169.254.169.254/latest/meta-data/', 'link-local address'],
    ['https://[::ffff:169.254.169.254]/', 'link-local address'],
    ['https://[::ffff:a9fe:a9fe]/', 'link-local address'],
    ['https://[64:ff9b::a9fe:a9fe]/', 'link-local address'],
    ['https://10.0.0.1/hook', 'private address'],
    ['https://[fd00::1]/hook', 'private address'],
    ['https://2130706433/', 'loopback address'],
    ['https://0x7f.1/', 'loopback address'],
    ['https://127.0.0.1:9001/2018-06-01/runtime/invocation/next', 'loopback address'],
    ['https://localhost/', 'loopback address'],
    ['https://100.100.100.200/', 'shared address'],
    ['https://metadata.google.internal/computeMetadata/v1/', 'internal name'],
    ['https://metadata.google.internal./', 'internal name'],
    ['https://metadata/', 'internal name'],
    ['https://printer.local/', 'internal name'],
    ['https://user:pass@psa.example.com/hook', 'credentials in URL'],
    ['https://token@psa.example.com/hook', 'credentials in URL'],
    ['http://psa.example.com/hook', 'http:// is only for a loopback address in local development'],
    ['http://127.0.0.1:9001/', 'http:// is only for a loopback address in local development'],
    ['ftp://psa.example.com/', 'only https:// URLs are called'],
  ])('refuses %s: %s', (url, reason) => {
    expect(urlProblem(url)).toBe(reason);
  });

  it('takes an https URL to a public name, and http:// to loopback only under the allowance', () => {
    expect(urlProblem('https://psa.example.com/hook')).toBeUndefined();
    expect(urlProblem('http://127.0.0.1:8080/hook')).toBe(
      'http:// is only for a loopback address in local development',
    );
    process.env.OUTBOUND_ALLOW_LOOPBACK = 'true';
    expect(urlProblem('http://127.0.0.1:8080/hook')).toBeUndefined();
    expect(urlProblem('http://localhost:8080/hook')).toBeUndefined();
    expect(urlProblem('http://10.0.0.1/hook')).toBe('http:// is only for a loopback address in local development');
    process.env.AWS_LAMBDA_FUNCTION_NAME = 'logbook-worker';
    expect(urlProblem('http://127.0.0.1:9001/2018-06-01/runtime/invocation/next')).toBe(
      'http:// is only for a loopback address in local development',
    );
  });
});

describe('checkDestination', () => {
  it.each(refusedAddresses)('refuses a name that resolves to %s (%s)', async (address, reason) => {
    stubResolver({ 'psa.example.com': [address] });
    await expect(checkDestination('https://psa.example.com/hook')).rejects.toThrow(`refused: ${reason}`);
  });

  it('refuses a name when any one of its addresses is inside', async () => {
    stubResolver({ 'psa.example.com': ['93.184.215.14', '10.0.0.7'] });
    await expect(checkDestination('https://psa.example.com/hook')).rejects.toThrow('refused: private address');
  });

  it('resolves once and answers the checked address to connect to', async () => {
    const calls = stubResolver({ 'psa.example.com': ['93.184.215.14'], 'v6.example.com': ['::ffff:8.8.4.4'] });
    expect(await checkDestination('https://psa.example.com/hook')).toMatchObject({
      address: '93.184.215.14',
      family: 4,
    });
    expect(await checkDestination('https://v6.example.com/hook')).toMatchObject({ address: '8.8.4.4', family: 4 });
    expect(calls).toEqual(['psa.example.com', 'v6.example.com']);
  });

  it('refuses a name that does not resolve at delivery, and accepts it at configuration', async () => {
    stubResolver({});
    await expect(checkDestination('https://nowhere.example.com/')).rejects.toThrow('refused: name does not resolve');
    expect(await configurationProblem('https://nowhere.example.com/')).toBeUndefined();
  });

  it('gives up on a resolver that does not answer within 5 seconds', async () => {
    vi.useFakeTimers();
    try {
      useResolver(() => new Promise(() => {}));
      const check = checkDestination('https://stalled.example.com/');
      const refused = expect(check).rejects.toThrow('refused: name does not resolve');
      await vi.advanceTimersByTimeAsync(5_000);
      await refused;
    } finally {
      vi.useRealTimers();
    }
  });

  it('answers the reason at configuration', async () => {
    stubResolver({ 'psa.example.com': ['169.254.169.254'] });
    expect(await configurationProblem('https://psa.example.com/hook')).toBe('link-local address');
    expect(await configurationProblem('https://u:p@psa.example.com/hook')).toBe('credentials in URL');
  });
});

describe('postOutbound', () => {
  it('connects to the checked address whatever the name resolves to later, and follows no redirect', async () => {
    process.env.OUTBOUND_ALLOW_LOOPBACK = 'true';
    const seen: { host?: string; url?: string }[] = [];
    const server = createServer((req, res) => {
      seen.push({ host: req.headers.host, url: req.url });
      res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' }).end('moved');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    // The first answer is checked; any later lookup would answer the metadata address.
    let answers = 0;
    useResolver(async () => (answers++ === 0 ? ['127.0.0.1'] : ['169.254.169.254']));
    try {
      const answer = await postOutbound(`http://psa.localhost:${port}/hook`, {
        headers: { 'content-type': 'application/json' },
        body: '{}',
        timeoutMs: 5000,
        maxAnswerBytes: 1024,
      });
      expect(answer).toEqual({ status: 302, text: 'moved' });
      expect(seen).toEqual([{ host: `psa.localhost:${port}`, url: '/hook' }]);
      expect(answers).toBe(1);
    } finally {
      server.close();
    }
  });

  it('refuses before connecting', async () => {
    stubResolver({ 'psa.example.com': ['10.0.0.1'] });
    const attempt = postOutbound('https://psa.example.com/hook', {
      headers: {},
      body: '{}',
      timeoutMs: 5000,
      maxAnswerBytes: 1024,
    });
    await expect(attempt).rejects.toBeInstanceOf(OutboundRefused);
    await expect(attempt).rejects.toThrow('refused: private address');
  });
});
