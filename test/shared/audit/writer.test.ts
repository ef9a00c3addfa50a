import { randomUUID } from 'node:crypto';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import {
  type AuditContext,
  createAuditLogAsync,
  flushAudit,
  writeAuditEvent,
  writeRouteAudit,
  zeroUuid,
} from '#shared/audit/writer.ts';
import type { Db } from '#shared/db/db.ts';
import { NotFound } from '#shared/errors.ts';
import { httpHandler } from '#shared/http/handler.ts';
import type { RouteDef } from '#shared/http/route.ts';
import { httpEvent, lambdaContext } from '#test/support/events.ts';
import { orgUser } from '#test/support/tenants.ts';
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
  t.db.admin
    .query<Record<string, unknown>>(
      `SELECT actor_type::text AS "actorType", actor_id::text AS "actorId", actor_email AS "actorEmail", resource_id::text AS "resourceId",
            resource_name AS "resourceName", details, ip_address AS "ipAddress", user_agent AS "userAgent", result::text AS result
       FROM audit_logs WHERE action = :action::text ORDER BY seq`,
      { action },
    )
    .then((r) => r.rows);

/** A route whose handler starts an audit write and returns without waiting for it (or throws). */
const auditingHandler = (action: string, fail = false) =>
  httpHandler(
    {
      operationId: 'test',
      auth: 'user',
      tag: 'test',
      summary: 'test',
      query: z.object({}),
    } as const satisfies RouteDef,
    async ({ audit }) => {
      writeRouteAudit(audit, { orgId, action, resourceType: 'device', resourceId: randomUUID(), resourceName: 'WS-1' });
      if (fail) throw NotFound('Device');
      return { done: true };
    },
  );

describe('writeAuditEvent', () => {
  it('stores a non-UUID actorId and resourceId as the zero UUID, keeping the originals in details', async () => {
    await writeAuditEvent(context(), {
      orgId,
      actorType: 'system',
      actorId: 'scheduler',
      action: 'test.raw',
      resourceId: 'job-42',
      details: { n: 1 },
    });
    expect(await rowsOf('test.raw')).toEqual([
      expect.objectContaining({
        actorId: zeroUuid,
        resourceId: zeroUuid,
        details: { n: 1, rawActorId: 'scheduler', rawResourceId: 'job-42' },
      }),
    ]);
  });

  it('drops an event without orgId and stores nothing', async () => {
    await writeAuditEvent(context(), { orgId: null, actorType: 'system', actorId: zeroUuid, action: 'test.no-org' });
    expect(await rowsOf('test.no-org')).toEqual([]);
  });

  it('rejects an actorType outside the five of the specification', async () => {
    await expect(
      writeAuditEvent(context(), {
        orgId,
        actorType: 'robot' as 'system',
        actorId: zeroUuid,
        action: 'test.bad-actor',
      }),
    ).rejects.toThrow(/Invalid audit event/);
    expect(await rowsOf('test.bad-actor')).toEqual([]);
  });
});

describe('audit writes of a request', () => {
  it('take the actor, IP and user agent from the authenticated request', async () => {
    const reply = await auditingHandler('test.actor')(
      httpEvent({ headers: { authorization: `Bearer ${token}`, 'user-agent': 'curl/8' } }),
      lambdaContext,
    );
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
      await tx.query(
        `INSERT INTO audit_entries (org_id, actor_type, actor_id, action) VALUES (:orgId::uuid, 'system', :zero::uuid, 'test.blocker')`,
        {
          orgId,
          zero: zeroUuid,
        },
      );
      locked();
      await new Promise<void>((resolve) => (release = resolve));
    });
    await lockHeld;
    let repliedYet = false;
    const replied = auditingHandler('test.late')(
      httpEvent({ headers: { authorization: `Bearer ${token}` } }),
      lambdaContext,
    );
    void replied.then(() => (repliedYet = true));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(repliedYet).toBe(false);
    release();
    await held;
    expect(await replied).toMatchObject({ statusCode: 200 });
    expect(await rowsOf('test.late')).toHaveLength(1);
  });

  it('land also when the handler fails, and the error reply is unchanged', async () => {
    const reply = await auditingHandler('test.on-error', true)(
      httpEvent({ headers: { authorization: `Bearer ${token}` } }),
      lambdaContext,
    );
    expect(reply).toMatchObject({ statusCode: 404 });
    expect(await rowsOf('test.on-error')).toHaveLength(1);
  });

  it('never change the reply when the insert fails', async () => {
    await t.db.admin.query('REVOKE INSERT ON audit_entries FROM logbook_app');
    try {
      const reply = await auditingHandler('test.failing')(
        httpEvent({ headers: { authorization: `Bearer ${token}` } }),
        lambdaContext,
      );
      expect(reply).toMatchObject({ statusCode: 200, body: JSON.stringify({ done: true }) });
    } finally {
      await t.db.admin.query('GRANT INSERT ON audit_entries TO logbook_app');
    }
    expect(await rowsOf('test.failing')).toEqual([]);
  });
});

describe('audit writes of a request, whatever the request sent', () => {
  it('store the row of a request with a 5,000-character User-Agent, cut to 4,096 characters', async () => {
    const userAgent = `Mozilla/5.0 ${'x'.repeat(5_000 - 12)}`;
    const reply = await auditingHandler('test.long-agent')(
      httpEvent({ headers: { authorization: `Bearer ${token}`, 'user-agent': userAgent } }),
      lambdaContext,
    );
    expect(reply).toMatchObject({ statusCode: 200 });
    expect(await rowsOf('test.long-agent')).toEqual([
      expect.objectContaining({ actorEmail: 'ada@example.com', userAgent: userAgent.slice(0, 4_096) }),
    ]);
  });

  it('store text PostgreSQL cannot hold (lone surrogates, NUL) with U+FFFD in its place, in columns and details alike', async () => {
    // As at enrollment: the new agent is the actor, its hostname the actor's name.
    const agentId = randomUUID();
    const caller = { actorType: 'agent' as const, agentId, deviceId: randomUUID(), orgId };
    const audit: AuditContext = {
      db: t.app,
      pending: [],
      caller,
      actorName: 'evil\ud800host',
      userAgent: 'agent\udc00/1.0',
      ipAddress: '203.0.113.5',
    };
    writeRouteAudit(audit, {
      orgId,
      action: 'test.unstorable',
      resourceType: 'device',
      resourceName: 'evil\ud800host',
      details: { hostname: 'evil\ud800host', 'key\udbff': ['a\u0000b', { deeper: '\udfff' }] },
    });
    await flushAudit(audit);
    expect(await rowsOf('test.unstorable')).toEqual([
      expect.objectContaining({
        actorType: 'agent',
        actorId: agentId,
        resourceName: 'evil\ufffdhost',
        userAgent: 'agent\ufffd/1.0',
        ipAddress: '203.0.113.5',
        details: {
          hostname: 'evil\ufffdhost',
          'key\ufffd': ['a\ufffdb', { deeper: '\ufffd' }],
          actor: { name: 'evil\ufffdhost', role: null },
        },
      }),
    ]);
  });

  it('cut texts longer than their column to its limit, a character split by the cut dropped whole', async () => {
    const audit: AuditContext = { db: t.app, pending: [] };
    // 254 characters, then an astral character (two UTF-16 units), then more: 255 characters kept.
    const resourceName = `${'n'.repeat(254)}😀${'m'.repeat(50)}`;
    writeRouteAudit(audit, {
      orgId,
      action: 'test.long-name',
      resourceType: 't'.repeat(60),
      resourceName,
      resourceId: `job-${'9'.repeat(300)}`,
    });
    await flushAudit(audit);
    const [row] = await t.db.admin
      .query<{ resourceName: string; resourceType: string; raw: string }>(
        `SELECT resource_name AS "resourceName", resource_type AS "resourceType", details->>'rawResourceId' AS raw FROM audit_logs WHERE action = 'test.long-name'`,
      )
      .then((r) => r.rows);
    expect(row).toEqual({
      resourceName: `${'n'.repeat(254)}😀`,
      resourceType: 't'.repeat(50),
      raw: `job-${'9'.repeat(251)}`,
    });
  });

  it('keep a client address that is not an IP out of ipAddress, and the original in details.rawIpAddress', async () => {
    const audit: AuditContext = { db: t.app, pending: [] };
    writeRouteAudit(audit, { orgId, action: 'test.raw-ip', ipAddress: 'unknown, 10.0.0.1' });
    await flushAudit(audit);
    expect(await rowsOf('test.raw-ip')).toEqual([
      expect.objectContaining({
        ipAddress: null,
        details: expect.objectContaining({ rawIpAddress: 'unknown, 10.0.0.1' }),
      }),
    ]);
  });
});

describe('log lines of the writer', () => {
  const failingDb: Db = {
    query: () => Promise.reject(new Error('connection lost')),
    transaction: () => Promise.reject(new Error('connection lost')),
    close: async () => undefined,
  };
  const savedEnv = process.env.NODE_ENV;
  afterEach(() => {
    process.env.NODE_ENV = savedEnv;
    vi.restoreAllMocks();
  });

  /** What the writer printed while `fn` ran: console lines, and any other line (a structured logger) about the audit write. */
  async function printed(fn: () => Promise<void>) {
    const error = vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined);
    const log = vi.spyOn(console, 'log').mockImplementation(() => undefined);
    const info = vi.spyOn(console, 'info').mockImplementation(() => undefined);
    const stdout = vi.spyOn(process.stdout, 'write');
    const stderr = vi.spyOn(process.stderr, 'write');
    await fn();
    const other = [...stdout.mock.calls, ...stderr.mock.calls, ...log.mock.calls, ...info.mock.calls]
      .map((call) => String(call[0]))
      .filter((line) => line.includes('audit'));
    return { error: error.mock.calls, warn: warn.mock.calls, other };
  }

  it('outside test environments, a dropped event prints one warning beginning [audit] Dropped event (no orgId):', async () => {
    process.env.NODE_ENV = 'production';
    const lines = await printed(() =>
      writeAuditEvent(context(), { orgId: null, actorType: 'system', actorId: zeroUuid, action: 'test.printed-drop' }),
    );
    expect(lines).toEqual({ error: [], warn: [['[audit] Dropped event (no orgId):', 'test.printed-drop']], other: [] });
  });

  it('outside test environments, a failed write prints one error line beginning [audit] Failed to write audit log:', async () => {
    process.env.NODE_ENV = 'production';
    const lines = await printed(async () => {
      const audit: AuditContext = { db: failingDb, pending: [] };
      createAuditLogAsync(audit, { orgId, actorType: 'system', actorId: zeroUuid, action: 'test.printed-failure' });
      await flushAudit(audit);
    });
    expect(lines.error).toEqual([
      [
        '[audit] Failed to write audit log:',
        'test.printed-failure',
        expect.objectContaining({ message: 'connection lost' }),
      ],
    ]);
    expect(lines.warn).toEqual([]);
    expect(lines.other).toEqual([]);
  });

  it('in test environments (NODE_ENV=test) prints nothing', async () => {
    process.env.NODE_ENV = 'test';
    const lines = await printed(async () => {
      const audit: AuditContext = { db: failingDb, pending: [] };
      createAuditLogAsync(audit, { orgId, actorType: 'system', actorId: zeroUuid, action: 'test.silent-failure' });
      await writeAuditEvent(audit, { orgId: null, actorType: 'system', actorId: zeroUuid, action: 'test.silent-drop' });
      await flushAudit(audit);
    });
    expect(lines).toEqual({ error: [], warn: [], other: [] });
  });
});
