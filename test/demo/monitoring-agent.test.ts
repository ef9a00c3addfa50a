import { beforeAll, describe, expect, it } from 'vitest';
import { startAgent } from '#demo/agent/agent.ts';
import { generateEventStore } from '#demo/agent/event-store.ts';
import { defaultMachine } from '#demo/agent/monitoring.ts';
import { useApi } from '#test/support/api.ts';
import { createTenant, enrollDevice, type Tenant } from '#test/support/tenants.ts';

const t = useApi();
let tenant: Tenant;
beforeAll(async () => {
  tenant = await createTenant(t.api, 'Acme');
});

describe('the simulated agent speaks the monitoring protocol', () => {
  it('fetches its config when the version changes, and its metrics and checks drive the monitors', async () => {
    const agent = await enrollDevice(t.api, tenant, 'WIN-MON');
    const machine = defaultMachine();
    const running = startAgent({
      server: t.api.url,
      wsUrl: t.api.wsUrl,
      agentId: agent.agentId,
      token: agent.token,
      store: generateEventStore({ computer: 'WIN-MON' }),
      submitEvents: false,
      heartbeatSeconds: 3600,
      machine,
      role: 'server',
    });
    const states = async () =>
      Object.fromEntries(
        (
          await t.api.request('GET', `/api/v1/devices/${agent.deviceId}/monitor-states`, { token: tenant.orgToken })
        ).body.data.map((s: { itemKey: string; state: string }) => [s.itemKey, s.state]),
      );
    const openAlerts = async () =>
      (
        await t.api.request('GET', `/api/v1/alerts?source=monitor&status=open&deviceId=${agent.deviceId}`, {
          token: tenant.orgToken,
        })
      ).body.data.map((a: { source: { itemKey: string } }) => a.source.itemKey);
    try {
      await running.connected();
      await running.checkIn();
      // No policy yet: samples are stored, nothing is judged.
      expect(await states()).toEqual({});
      const policy = await t.api.request('POST', '/api/v1/policies', {
        token: tenant.partnerToken,
        body: {
          kind: 'monitoring',
          name: 'Servers',
          orgId: tenant.orgId,
          items: [
            {
              key: 'memory',
              type: 'metric',
              severity: 'high',
              metric: 'memory.percent',
              op: 'gt',
              threshold: 90,
              clearThreshold: 70,
              windowSeconds: 60,
              aggregation: 'last',
            },
            { key: 'spooler', type: 'service', severity: 'low', name: 'Spooler', expect: 'running' },
          ],
        },
      });
      await t.api.request('POST', `/api/v1/policies/${policy.body.id}/assignments`, {
        token: tenant.partnerToken,
        body: { level: 'organization', targetId: tenant.orgId, roles: ['server'] },
      });
      // The next heartbeat names a new config version: the agent fetches it and reports against it.
      await running.checkIn();
      expect(await states()).toEqual({ memory: 'ok', spooler: 'ok' });
      machine.memoryPercent = 97;
      machine.services.Spooler = 'stopped';
      await running.checkIn();
      expect(await states()).toEqual({ memory: 'firing', spooler: 'firing' });
      expect((await openAlerts()).sort()).toEqual(['memory', 'spooler']);
      machine.memoryPercent = 50;
      machine.services.Spooler = 'running';
      await running.checkIn();
      expect(await states()).toEqual({ memory: 'ok', spooler: 'ok' });
      expect(await openAlerts()).toEqual([]);
    } finally {
      await running.stop();
    }
  });
});
