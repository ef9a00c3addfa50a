import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { describe, expect, it, beforeAll } from 'vitest';
import { writeAuditEvent, writeRouteAudit, zeroUuid, type AuditContext } from '#shared/audit/writer.ts';
import { httpHandler } from '#shared/http/handler.ts';
import { route } from '#shared/http/route.ts';
import { NotFound } from '#shared/errors.ts';
import { orgUser } from '#test/support/tenants.ts';
import { httpEvent, lambdaContext } from '#test/support/events.ts';
import { useAuditDatabase } from './audit-rows.ts';

const t = useAuditDatabase();
const orgId = randomUUID();
const partnerId = randomUUID();
let token: string;
beforeAll(async () => {
  process.env.APP_DATABASE_URL = t.db.urls.app;
  token = await orgUser(partnerId, orgId, 'org_admin', { email: 'ada@example.com', name: 'Ada' });
});

const context = (): AuditContext => ({ db: t.app, pending: [] });
const rowsOf = (action: string) =>
  t.db.admin.query<Record<string, unknown>>(
    `SELECT actor_type::text AS "actorType", actor_id::text AS "actorId", actor_email AS "actorEmail", resource_id::text AS "resourceId",
            details, ip_address AS "ipAddress", user_agent AS "userAgent", result::text AS result
       FROM audit_logs WHERE action = :action::text ORDER BY seq`,
    { action },
  ).then((r) => r.rows);

/** A route whose handler starts an audit write and returns without waiting for it (or throws). */
const auditingHandler = (action: string, fail = false) =>
  httpHandler(route({ handler: 'test', auth: 'user', tag: 'test', summary: 'test', query: z.object({}) }), async ({ audit }) => {
    writeRouteAudit(audit, { orgId, action, resourceType: 'device', resourceId: randomUUID(), resourceName: 'WS-1' });
    if (fail) throw NotFound('Device');
    return { done: true };
  });

describe('writeAuditEvent', () => {
  it('stores a non-UUID actorId and resourceId as the zero UUID, keeping the originals in details', async () => {
    await writeAuditEvent(context(), { orgId, actorType: 'system', actorId: 'scheduler', action: 'test.raw', resourceId: 'job-42', details: { n: 1 } });
    expect(await rowsOf('test.raw')).toEqual([
      expect.objectContaining({ actorId: zeroUuid, resourceId: zeroUuid, details: { n: 1, rawActorId: 'scheduler', rawResourceId: 'job-42' } }),
    ]);
  });

  it('drops an event without orgId and stores nothing', async () => {
    await writeAuditEvent(context(), { orgId: null, actorType: 'system', actorId: zeroUuid, action: 'test.no-org' });
    expect(await rowsOf('test.no-org')).toEqual([]);
  });

  it('rejects an actorType outside the five of the specification', async () => {
    await expect(writeAuditEvent(context(), { orgId, actorType: 'robot' as 'system', actorId: zeroUuid, action: 'test.bad-actor' })).rejects.toThrow(/Invalid audit event/);
    expect(await rowsOf('test.bad-actor')).toEqual([]);
  });
});

describe('audit writes of a request', () => {
  it('take the actor, IP and user agent from the authenticated request', async () => {
    const reply = await auditingHandler('test.actor')(httpEvent({ headers: { authorization: `Bearer ${token}`, 'user-agent': 'curl/8' } }), lambdaContext);
    expect(reply).toMatchObject({ statusCode: 200 });
    expect(await rowsOf('test.actor')).toEqual([
      expect.objectContaining({
        actorType: 'user',
        actorEmail: 'ada@example.com',
        ipAddress: '198.51.100.20',
        userAgent: 'curl/8',
        details: { actor: { name: 'Ada', role: 'org_admin' } },
      }),
    ]);
  });

  it('land before the reply leaves, even when the handler returned before the write finished', async () => {
    // Another writer holds the organization's chain lock, so this request's write must wait for it.
    let release!: () => void;
    let locked!: () => void;
    const lockHeld = new Promise<void>((resolve) => (locked = resolve));
    const held = t.db.admin.transaction(async (tx) => {
      await tx.query(`INSERT INTO audit_logs (org_id, actor_type, actor_id, action, checksum) VALUES (:orgId::uuid, 'system', :zero::uuid, 'test.blocker', '')`, {
        orgId,
        zero: zeroUuid,
      });
      locked();
      await new Promise<void>((resolve) => (release = resolve));
    });
    await lockHeld;
    let repliedYet = false;
    const replied = auditingHandler('test.late')(httpEvent({ headers: { authorization: `Bearer ${token}` } }), lambdaContext);
    void replied.then(() => (repliedYet = true));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(repliedYet).toBe(false);
    release();
    await held;
    expect(await replied).toMatchObject({ statusCode: 200 });
    expect(await rowsOf('test.late')).toHaveLength(1);
  });

  it('land also when the handler fails, and the error reply is unchanged', async () => {
    const reply = await auditingHandler('test.on-error', true)(httpEvent({ headers: { authorization: `Bearer ${token}` } }), lambdaContext);
    expect(reply).toMatchObject({ statusCode: 404 });
    expect(await rowsOf('test.on-error')).toHaveLength(1);
  });

  it('never change the reply when the insert fails', async () => {
    await t.db.admin.query('REVOKE INSERT ON audit_logs FROM logbook_app');
    try {
      const reply = await auditingHandler('test.failing')(httpEvent({ headers: { authorization: `Bearer ${token}` } }), lambdaContext);
      expect(reply).toMatchObject({ statusCode: 200, body: JSON.stringify({ done: true }) });
    } finally {
      await t.db.admin.query('GRANT INSERT ON audit_logs TO logbook_app');
    }
    expect(await rowsOf('test.failing')).toEqual([]);
  });
});
