import { describe, expect, it } from 'vitest';
import { startAgent } from '#demo/agent/agent.ts';
import { generateEventStore } from '#demo/agent/event-store.ts';
import { seedDemo, signDemoUserTokens } from '#demo/demo.ts';
import { seedDemoPostureFleet } from '#demo/demo-posture.ts';
import { useApi } from '#test/support/api.ts';
import { eventually } from '#test/support/live-agents.ts';
import { createTenant, enrollDevice } from '#test/support/tenants.ts';

const t = useApi();

describe('management posture in the demo', () => {
  it('seeds a fleet with an old RMM active, only installed, clean, never scanned and stale, once', async () => {
    const demo = await seedDemo(t.db.admin);
    await seedDemoPostureFleet(t.db.admin, demo);
    await seedDemoPostureFleet(t.db.admin, demo);
    const { partnerAdmin } = await signDemoUserTokens(demo);
    const reply = await t.api.request('GET', `/api/v1/reports/management-posture?orgId=${demo.orgId}`, {
      token: partnerAdmin,
    });
    expect(reply.status).toBe(200);
    // The demo device itself was never scanned, beside the fleet's two.
    expect(reply.body.coverage).toEqual({ devices: 12, neverScanned: 3, stale: 1, clean: 2, withDetection: 6 });
    expect(reply.body.products).toContainEqual({
      category: 'rmm',
      product: 'Datto RMM',
      active: 3,
      installed: 2,
      stale: 1,
    });
  });

  it('the simulated agent uploads its posture snapshot with its first heartbeat', async () => {
    const tenant = await createTenant(t.api, 'Sim');
    const agent = await enrollDevice(t.api, tenant, 'sim-posture');
    const running = startAgent({
      server: t.api.url,
      wsUrl: t.api.wsUrl,
      agentId: agent.agentId,
      token: agent.token,
      store: generateEventStore({ computer: 'sim-posture' }),
      posture: () => ({
        collectedAt: new Date().toISOString(),
        categories: { 'remote-access': [{ name: 'AnyDesk', status: 'installed' }] },
      }),
    });
    try {
      await eventually(async () => {
        const { rows } = await t.db.admin.query(
          'SELECT product FROM device_posture_detections WHERE device_id = :id::uuid',
          {
            id: agent.deviceId,
          },
        );
        return rows.length === 1;
      });
    } finally {
      await running.stop();
    }
  });
});
