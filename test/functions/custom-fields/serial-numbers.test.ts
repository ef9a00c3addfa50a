import { beforeAll, describe, expect, it } from 'vitest';
import { useApi } from '#test/support/api.ts';
import { createTenant, type Tenant } from '#test/support/tenants.ts';

const t = useApi();
let tenant: Tenant;

async function enroll(hostname: string, serialNumber?: string) {
  const key = await t.api.request('POST', `/api/v1/orgs/organizations/${tenant.orgId}/enrollment-keys`, {
    token: tenant.orgToken,
    body: {},
  });
  const reply = await t.api.request('POST', '/api/v1/agents/enroll', {
    body: { enrollmentKey: key.body.key, hostname, serialNumber },
  });
  expect(reply.status).toBe(201);
  return reply.body as { agentId: string; deviceId: string; token: string };
}

const serialOf = async (deviceId: string) =>
  (await t.api.request('GET', `/api/v1/devices/${deviceId}`, { token: tenant.orgToken })).body.serialNumber;

beforeAll(async () => {
  tenant = await createTenant(t.api, 'Acme');
});

describe('serial numbers', () => {
  it('are reported at enrollment and heartbeat, and shown on the device', async () => {
    const agent = await enroll('PC-1', ' CZC1234XYZ ');
    expect(await serialOf(agent.deviceId)).toBe('CZC1234XYZ');
    const beat = await t.api.request('POST', `/api/v1/agents/${agent.agentId}/heartbeat`, {
      token: agent.token,
      body: { serialNumber: 'CZC9999NEW' },
    });
    expect(beat.status).toBe(200);
    expect(await serialOf(agent.deviceId)).toBe('CZC9999NEW');
  });

  it.each(['To be filled by O.E.M.', 'Default string', '0', 'System Serial Number', '000000', '  '])(
    'ignore the placeholder %j at enrollment and heartbeat',
    async (junk) => {
      const blank = await enroll(`PC-junk-${junk.length}`, junk);
      expect(await serialOf(blank.deviceId)).toBeNull();
      const known = await enroll(`PC-known-${junk.length}`, 'R90XK2LM');
      await t.api.request('POST', `/api/v1/agents/${known.agentId}/heartbeat`, {
        token: known.token,
        body: { serialNumber: junk },
      });
      expect(await serialOf(known.deviceId)).toBe('R90XK2LM');
    },
  );
});
