import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { bindNewAlert, raiseScriptAlert } from '#shared/alerts/raise.ts';
import * as store from '#shared/alerts/store.ts';
import { numberTicketsJobKind, runNumberTicketsJob } from '#shared/alerts/ticket-numbers.ts';
import { type AuditContext, auditChangeWith, flushAudit } from '#shared/audit/writer.ts';
import { appDb } from '#shared/db/client.ts';
import { useApi } from '#test/support/api.ts';
import { createTenant, enrollDevice, type Tenant } from '#test/support/tenants.ts';

const t = useApi();
let tenant: Tenant;
let devices: { orgId: string; deviceId: string }[];
beforeAll(async () => {
  tenant = await createTenant(t.api, 'Numbered');
  const second = await t.api.request('POST', '/api/v1/orgs/organizations', {
    token: tenant.partnerToken,
    body: { name: 'Numbered Branch' },
  });
  const first = await enrollDevice(t.api, tenant, 'numbered-1');
  const other = await enrollDevice(
    t.api,
    { ...tenant, orgId: second.body.id, orgToken: tenant.partnerToken },
    'numbered-2',
  );
  devices = [
    { orgId: tenant.orgId, deviceId: first.deviceId },
    { orgId: second.body.id, deviceId: other.deviceId },
  ];
});

const alertOf = (device: { orgId: string; deviceId: string }) => ({
  orgId: device.orgId,
  partnerId: tenant.partnerId,
  deviceId: device.deviceId,
  sourceType: 'script' as const,
  sourceId: randomUUID(),
  sourceKey: `script:${randomUUID()}`,
  severity: 'high' as const,
  title: 'Disk check exited with code 2',
  details: {},
});

const raise = (device: { orgId: string; deviceId: string }) =>
  raiseScriptAlert(
    appDb(),
    {
      runItemId: randomUUID(),
      runId: randomUUID(),
      orgId: device.orgId,
      partnerId: tenant.partnerId,
      deviceId: device.deviceId,
      hostname: 'numbered-host',
      scriptId: randomUUID(),
      scriptName: 'Disk check',
      scriptVersion: 1,
      exitCode: 2,
    },
    'high',
  );

/** The partner's tickets with their alerts, by number. */
const ticketsOfPartner = async () =>
  (
    await t.db.admin.query<{ number: number; ticketId: string; alertId: string; orgId: string }>(
      `SELECT t.number, t.id AS "ticketId", a.id AS "alertId", t.org_id AS "orgId"
         FROM tickets t JOIN alerts a ON a.ticket_id = t.id WHERE t.partner_id = :partnerId::uuid ORDER BY t.number`,
      { partnerId: tenant.partnerId },
    )
  ).rows;

/** The `alert.create` and `ticket.create` of a ticket's alert, in the order of its organization's trail. */
const trailOf = async (ticket: { ticketId: string; alertId: string; orgId: string }) =>
  (
    await t.db.admin.query<{ action: string; resourceName: string }>(
      `SELECT action, resource_name AS "resourceName" FROM audit_logs
        WHERE org_id = :orgId::uuid AND resource_id IN (:alertId::uuid, :ticketId::uuid) AND action LIKE '%.create'
        ORDER BY seq`,
      ticket,
    )
  ).rows;

const waitingRequests = async () =>
  (
    await t.db.admin.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM ticket_requests WHERE partner_id = :partnerId::uuid',
      { partnerId: tenant.partnerId },
    )
  ).rows[0]!.n;

/** A raise's transaction without what runs after its commit (its process stopped there): its alert's id. */
async function leaveRequest(device: { orgId: string; deviceId: string }): Promise<string> {
  const audit: AuditContext = { db: appDb(), caller: null, pending: [] };
  const alertId = await appDb().transaction(async (tx) => {
    const { alert } = await store.upsertAlert(tx, alertOf(device));
    const ticketId = randomUUID();
    await auditChangeWith(
      tx,
      audit,
      [
        {
          orgId: alert.orgId,
          action: 'alert.create',
          resourceType: 'alert',
          resourceId: alert.id,
          resourceName: alert.title,
        },
        {
          orgId: alert.orgId,
          action: 'ticket.create',
          resourceType: 'ticket',
          resourceId: ticketId,
          resourceName: '#',
        },
      ],
      async (entries) => {
        const row = await store.bindNewAlertRow(tx, { ...alert, partnerId: tenant.partnerId, ticketId }, entries);
        return { entries: row.entries, ids: row.ids, failure: row.failure, answer: undefined };
      },
    );
    return alert.id;
  });
  await flushAudit(audit);
  return alertId;
}

describe("a partner's ticket numbers", () => {
  it('numbers concurrent raises over its organizations from 1 without gaps, each audited after its alert, by the time each raise returns', async () => {
    await Promise.all(Array.from({ length: 12 }, (_, i) => raise(devices[i % 2]!)));
    const tickets = await ticketsOfPartner();
    expect(tickets.map((ticket) => ticket.number)).toEqual(Array.from({ length: 12 }, (_, i) => i + 1));
    expect(new Set(tickets.map((ticket) => ticket.alertId)).size).toBe(12);
    expect(await waitingRequests()).toBe(0);
    for (const ticket of tickets)
      expect(await trailOf(ticket)).toEqual([
        { action: 'alert.create', resourceName: 'Disk check exited with code 2 on numbered-host' },
        { action: 'ticket.create', resourceName: `#${ticket.number}` },
      ]);
  });

  it('a raise that rolls back takes no number and leaves nothing waiting', async () => {
    const audit: AuditContext = { db: appDb(), caller: null, pending: [] };
    await expect(
      appDb().transaction(async (tx) => {
        const { alert } = await store.upsertAlert(tx, alertOf(devices[0]!));
        await bindNewAlert(tx, audit, alert, tenant.partnerId, {
          orgId: alert.orgId,
          action: 'alert.create',
          resourceType: 'alert',
          resourceId: alert.id,
          resourceName: alert.title,
        });
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    await flushAudit(audit);
    expect(await waitingRequests()).toBe(0);
    await raise(devices[1]!);
    expect((await ticketsOfPartner()).map((ticket) => ticket.number).slice(-2)).toEqual([12, 13]);
  });

  it.each([
    ['armed by the raise of another process', { armedBy: randomUUID() }],
    ['armed by a failed numbering, in any process', {}],
  ])(
    'a request committed by a process that stopped before numbering it is numbered and audited by a job %s',
    async (_, armed) => {
      const alertId = await leaveRequest(devices[1]!);
      expect(await waitingRequests()).toBe(1);
      await runNumberTicketsJob(appDb(), {
        kind: numberTicketsJobKind,
        dueAt: Date.now(),
        partnerId: tenant.partnerId,
        ...armed,
      });
      expect(await waitingRequests()).toBe(0);
      const count = (await ticketsOfPartner()).length;
      const ticket = (await ticketsOfPartner()).at(-1)!;
      expect(ticket).toMatchObject({ number: count, alertId, orgId: devices[1]!.orgId });
      expect(await trailOf(ticket)).toEqual([
        { action: 'alert.create', resourceName: 'Disk check exited with code 2' },
        { action: 'ticket.create', resourceName: `#${count}` },
      ]);
    },
  );

  it('an alert resolved before its request is numbered gets its ticket closed, audited after its creation', async () => {
    const alertId = await leaveRequest(devices[0]!);
    const resolved = await t.api.request('POST', '/api/v1/alerts/resolve', {
      token: tenant.partnerToken,
      body: { alertIds: [alertId] },
    });
    expect(resolved.status).toBe(200);
    await runNumberTicketsJob(appDb(), { kind: numberTicketsJobKind, dueAt: Date.now(), partnerId: tenant.partnerId });
    expect(await waitingRequests()).toBe(0);
    const ticket = (await ticketsOfPartner()).find((each) => each.alertId === alertId)!;
    const { rows } = await t.db.admin.query<{ status: string; closedAt: Date | null }>(
      'SELECT status, closed_at AS "closedAt" FROM tickets WHERE id = :id::uuid',
      { id: ticket.ticketId },
    );
    expect(rows[0]).toEqual({ status: 'closed', closedAt: expect.any(Date) });
    const { rows: trail } = await t.db.admin.query<{
      action: string;
      resourceName: string;
      actorType: string;
      actorId: string;
      details: unknown;
    }>(
      `SELECT action, resource_name AS "resourceName", actor_type::text AS "actorType", actor_id::text AS "actorId",
              details
         FROM audit_logs WHERE org_id = :orgId::uuid AND resource_id IN (:ticketId::uuid, :alertId::uuid) ORDER BY seq`,
      ticket,
    );
    // Closed in the name of whoever resolved the alert, as the resolve would have closed it.
    const resolve = trail.find((row) => row.action === 'alert.resolve')!;
    expect(resolve.actorType).toBe('user');
    expect(trail.filter((row) => row.action.startsWith('ticket.'))).toEqual([
      expect.objectContaining({ action: 'ticket.create', resourceName: `#${ticket.number}` }),
      {
        action: 'ticket.close',
        resourceName: `#${ticket.number}`,
        actorType: resolve.actorType,
        actorId: resolve.actorId,
        details: {
          alertId,
          before: { status: 'open' },
          after: { status: 'closed' },
          actor: { name: expect.any(String), role: null },
        },
      },
    ]);
  });
});
