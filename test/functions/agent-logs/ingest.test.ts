import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { keyDigestOf } from '#shared/db/idempotency.ts';
import { logger } from '#shared/logger.ts';
import { type Agent, logEntry, submitLogs } from '#test/support/agents.ts';
import { useApi } from '#test/support/api.ts';
import { createTenant, enrollDevice, type Tenant } from '#test/support/tenants.ts';

const t = useApi();
let tenant: Tenant;
beforeAll(async () => {
  tenant = await createTenant(t.api);
});
afterEach(() => {
  vi.restoreAllMocks();
});

const storedLogs = (deviceId: string) =>
  t.db.admin
    .query<Record<string, any>>(
      `SELECT device_id AS "deviceId", org_id AS "orgId", timestamp, level::text AS level, component, message, fields, agent_version AS "agentVersion"
         FROM agent_logs WHERE device_id = :deviceId::uuid ORDER BY timestamp DESC, message`,
      { deviceId },
    )
    .then((r) => r.rows);

const countLogs = async (deviceId: string) => (await storedLogs(deviceId)).length;

describe('POST /api/v1/agents/{id}/logs', () => {
  it('stores the entries with the device and organization of the agent and answers 201 { received }', async () => {
    const agent = await enrollDevice(t.api, tenant, 'logs-1');
    const entry = {
      timestamp: '2026-01-15T10:30:00.123Z',
      level: 'warn',
      component: 'updater',
      message: 'Update check failed',
      fields: { code: 503, retry: true },
      agentVersion: '2.4.1',
    };
    const reply = await submitLogs(t.api, agent, [entry, logEntry(1)]);
    expect(reply.status).toBe(201);
    expect(reply.body).toEqual({ received: 2 });
    const rows = await storedLogs(agent.deviceId);
    expect(rows).toHaveLength(2);
    expect(rows.find((r) => r.component === 'updater')).toEqual({
      deviceId: agent.deviceId,
      orgId: tenant.orgId,
      timestamp: new Date('2026-01-15T10:30:00.123Z'),
      level: 'warn',
      component: 'updater',
      message: 'Update check failed',
      fields: { code: 503, retry: true },
      agentVersion: '2.4.1',
    });
  });

  it('accepts 500 entries, stored in batches of 100, and counts them all', async () => {
    const agent = await enrollDevice(t.api, tenant, 'logs-500');
    const reply = await submitLogs(
      t.api,
      agent,
      Array.from({ length: 500 }, (_, i) => logEntry(i)),
    );
    expect(reply.status).toBe(201);
    expect(reply.body).toEqual({ received: 500 });
    expect(await countLogs(agent.deviceId)).toBe(500);
  });

  it('refuses 501 entries with 400 and stores none', async () => {
    const agent = await enrollDevice(t.api, tenant, 'logs-501');
    const reply = await submitLogs(
      t.api,
      agent,
      Array.from({ length: 501 }, (_, i) => logEntry(i)),
    );
    expect(reply.status).toBe(400);
    expect(reply.body.error.code).toBe('VALIDATION_FAILED');
    expect(reply.body.error.details).toEqual([expect.objectContaining({ path: 'body.logs', code: 'too_big' })]);
    expect(await countLogs(agent.deviceId)).toBe(0);
  });

  it('accepts an empty list and optional fields left out or null', async () => {
    const agent = await enrollDevice(t.api, tenant, 'logs-optional');
    expect((await submitLogs(t.api, agent, [])).body).toEqual({ received: 0 });
    const reply = await submitLogs(t.api, agent, [
      { timestamp: '2026-01-15T10:30:00Z', level: 'debug', component: 'ws', message: '' },
      {
        timestamp: '2026-01-15T10:31:00',
        level: 'error',
        component: 'ws',
        message: 'no offset is UTC',
        fields: null,
        agentVersion: null,
      },
    ]);
    expect(reply.status).toBe(201);
    const rows = await storedLogs(agent.deviceId);
    expect(rows.map((r) => [r.timestamp.toISOString(), r.fields, r.agentVersion])).toEqual([
      ['2026-01-15T10:31:00.000Z', {}, null],
      ['2026-01-15T10:30:00.000Z', {}, null],
    ]);
  });

  it('drops fields of an entry it does not know, as agents newer than the server send them', async () => {
    const agent = await enrollDevice(t.api, tenant, 'logs-unknown');
    const reply = await submitLogs(t.api, agent, [logEntry(0, { threadId: 7 })]);
    expect(reply.status).toBe(201);
  });

  it.each([
    ['timestamp', { timestamp: 'yesterday' }],
    ['timestamp', { timestamp: undefined }],
    ['timestamp', { timestamp: '2026-02-30T10:00:00Z' }],
    ['timestamp', { timestamp: '0000-01-01T00:00:00Z' }],
    ['level', { level: 'fatal' }],
    ['level', { level: 'WARN' }],
    ['component', { component: 'c'.repeat(101) }],
    ['component', { component: '' }],
    ['component', { component: undefined }],
    ['message', { message: 42 }],
    ['message', { message: undefined }],
    ['message', { message: 'broken \ud800 text' }],
    ['fields', { fields: ['a', 'b'] }],
    ['fields', { fields: 'k=v' }],
    ['agentVersion', { agentVersion: 'v'.repeat(51) }],
  ])(
    'refuses an entry with a bad %s (%j) with 400 naming body.logs.<index>.<field>, and stores none',
    async (field, override) => {
      const agent = await enrollDevice(t.api, tenant, `logs-bad-${field}`);
      const logs = Array.from({ length: 150 }, (_, i) => logEntry(i));
      logs[123] = logEntry(123, override);
      const reply = await submitLogs(t.api, agent, logs);
      expect(reply.status).toBe(400);
      expect(reply.body.error.code).toBe('VALIDATION_FAILED');
      expect(reply.body.error.details.map((d: { path: string }) => d.path)).toEqual([`body.logs.123.${field}`]);
      expect(await countLogs(agent.deviceId)).toBe(0);
    },
  );

  it('names a lone surrogate inside fields by its path', async () => {
    const agent = await enrollDevice(t.api, tenant, 'logs-fields-surrogate');
    const reply = await submitLogs(t.api, agent, [logEntry(0, { fields: { nested: { text: 'a\udc00' } } })]);
    expect(reply.status).toBe(400);
    expect(reply.body.error.details.map((d: { path: string }) => d.path)).toEqual(['body.logs.0.fields.nested.text']);
  });

  it('refuses a body that is not { logs: [...] } with 400', async () => {
    const agent = await enrollDevice(t.api, tenant, 'logs-shape');
    const missing = await t.api.request('POST', `/api/v1/agents/${agent.agentId}/logs`, {
      token: agent.token,
      body: { entries: [] },
    });
    expect(missing.status).toBe(400);
    expect(missing.body.error.details[0].path).toBe('body.logs');
    const notJson = await t.api.request('POST', `/api/v1/agents/${agent.agentId}/logs`, {
      token: agent.token,
      rawBody: '{"logs": [',
      headers: { 'content-type': 'application/json' },
    });
    expect(notJson.status).toBe(400);
  });

  it('refuses a body above 2 MiB with 413 before parsing it', async () => {
    const agent = await enrollDevice(t.api, tenant, 'logs-huge');
    const huge = `{"logs": [${'x'.repeat(2 * 1024 * 1024)}`;
    const reply = await t.api.request('POST', `/api/v1/agents/${agent.agentId}/logs`, {
      token: agent.token,
      rawBody: huge,
      headers: { 'content-type': 'application/json' },
    });
    expect(reply.status).toBe(413);
    expect(reply.body.error.code).toBe('PAYLOAD_TOO_LARGE');
  });

  it('stores an entry stamped more than 10 minutes ahead at the receipt time, keeping the original in fields.originalTimestamp', async () => {
    const agent = await enrollDevice(t.api, tenant, 'logs-future');
    const future = new Date(Date.now() + 3600_000).toISOString();
    const nearFuture = new Date(Date.now() + 5 * 60_000).toISOString();
    const before = Date.now();
    await submitLogs(t.api, agent, [
      logEntry(0, { timestamp: future, message: 'far', fields: { a: 1 } }),
      logEntry(0, { timestamp: nearFuture, message: 'near' }),
    ]);
    const rows = await storedLogs(agent.deviceId);
    const far = rows.find((r) => r.message === 'far')!;
    expect(far.timestamp.getTime()).toBeGreaterThanOrEqual(before - 1000);
    expect(far.timestamp.getTime()).toBeLessThanOrEqual(Date.now() + 1000);
    expect(far.fields).toEqual({ a: 1, originalTimestamp: future });
    const near = rows.find((r) => r.message === 'near')!;
    expect(near.timestamp.toISOString()).toBe(nearFuture);
    expect(near.fields).not.toHaveProperty('originalTimestamp');
  });

  it('writes no audit row: agent telemetry must not drown the trail', async () => {
    const agent = await enrollDevice(t.api, tenant, 'logs-no-audit');
    await submitLogs(t.api, agent, [logEntry(0)]);
    const { rows } = await t.db.admin.query(
      `SELECT action FROM audit_logs WHERE resource_id = :id::uuid AND action <> 'device.create'`,
      { id: agent.deviceId },
    );
    expect(rows).toEqual([]);
  });

  describe('when a batch fails', () => {
    /** Makes the database refuse any statement that inserts a log entry with this message. */
    async function poison(message: string) {
      await t.db.admin.query(`CREATE OR REPLACE FUNCTION test_poison_agent_logs() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          IF NEW.message = '${message}' THEN RAISE EXCEPTION 'poisoned batch'; END IF;
          RETURN NEW;
        END $$`);
      await t.db.admin.query(
        'CREATE OR REPLACE TRIGGER test_poison_agent_logs BEFORE INSERT ON agent_logs FOR EACH ROW EXECUTE FUNCTION test_poison_agent_logs()',
      );
    }
    const cure = () => t.db.admin.query('DROP TRIGGER IF EXISTS test_poison_agent_logs ON agent_logs');

    it('logs the seed text, stores the other batches whole, none of the failing one, and says what was received', async () => {
      const agent = await enrollDevice(t.api, tenant, 'logs-poison');
      const errors = vi.spyOn(console, 'error').mockImplementation(() => undefined);
      await poison('poison-250');
      try {
        const logs = Array.from({ length: 420 }, (_, i) => logEntry(i, { message: `entry-${i}` }));
        logs[250] = logEntry(250, { message: 'poison-250' });
        const reply = await submitLogs(t.api, agent, logs);
        expect(reply.status).toBe(201);
        expect(reply.body).toEqual({ received: 320, failed: [{ from: 200, to: 299 }] });
        const stored = new Set((await storedLogs(agent.deviceId)).map((r) => r.message));
        expect(stored.size).toBe(320);
        expect([...stored].some((m) => /^entry-2\d\d$/.test(m))).toBe(false);
        expect(stored.has('entry-199') && stored.has('entry-300') && stored.has('entry-419')).toBe(true);
        expect(errors).toHaveBeenCalledWith(
          `[AgentLogs] Error batch inserting logs for device ${agent.deviceId}`,
          expect.anything(),
        );
      } finally {
        await cure();
      }
    });

    it('fails the request when no batch could be stored, so the agent sends it again', async () => {
      const agent = await enrollDevice(t.api, tenant, 'logs-poison-all');
      vi.spyOn(console, 'error').mockImplementation(() => undefined);
      vi.spyOn(logger, 'error').mockImplementation(() => undefined);
      await poison('poison-only');
      try {
        const reply = await submitLogs(t.api, agent, [logEntry(0, { message: 'poison-only' })]);
        expect(reply.status).toBe(500);
        expect(await countLogs(agent.deviceId)).toBe(0);
      } finally {
        await cure();
      }
    });
  });

  it("keeps devices apart: an agent's entries land on its own device only", async () => {
    const one: Agent = await enrollDevice(t.api, tenant, 'logs-a');
    const two: Agent = await enrollDevice(t.api, tenant, 'logs-b');
    await submitLogs(t.api, one, [logEntry(0), logEntry(1)]);
    await submitLogs(t.api, two, [logEntry(0)]);
    expect([await countLogs(one.deviceId), await countLogs(two.deviceId)]).toEqual([2, 1]);
  });
});

describe('POST /api/v1/agents/{id}/logs with an Idempotency-Key', () => {
  it('stores a resent upload once and answers the resend with the first reply', async () => {
    const agent = await enrollDevice(t.api, tenant, 'logs-idempotent');
    const logs = Array.from({ length: 150 }, (_, i) => logEntry(i));
    const headers = { 'idempotency-key': 'upload-0001' };
    const first = await submitLogs(t.api, agent, logs, { headers });
    expect(first.status).toBe(201);
    expect(first.body).toEqual({ received: 150 });
    const resent = await submitLogs(t.api, agent, logs, { headers });
    expect(resent.status).toBe(201);
    expect(resent.body).toEqual({ received: 150 });
    expect(await countLogs(agent.deviceId)).toBe(150);
  });

  it('stores concurrent resends of one upload once', async () => {
    const agent = await enrollDevice(t.api, tenant, 'logs-concurrent');
    const logs = [logEntry(1), logEntry(2)];
    const headers = { 'idempotency-key': 'upload-concurrent' };
    const replies = await Promise.all(Array.from({ length: 4 }, () => submitLogs(t.api, agent, logs, { headers })));
    // One stores; each other replays its answer, or, while the first still runs, is told so (409) and resends.
    const statuses = replies.map((reply) => reply.status);
    expect(statuses).toContain(201);
    for (const status of statuses) expect([201, 409]).toContain(status);
    expect((await submitLogs(t.api, agent, logs, { headers })).status).toBe(201);
    expect(await countLogs(agent.deviceId)).toBe(2);
  });

  it('refuses the key with another body (422 IDEMPOTENCY_KEY_REUSED) and a malformed key (400), storing nothing', async () => {
    const agent = await enrollDevice(t.api, tenant, 'logs-reused');
    const headers = { 'idempotency-key': 'upload-reused' };
    expect((await submitLogs(t.api, agent, [logEntry(1)], { headers })).status).toBe(201);
    const reused = await submitLogs(t.api, agent, [logEntry(2)], { headers });
    expect(reused.status).toBe(422);
    expect(reused.body.error.code).toBe('IDEMPOTENCY_KEY_REUSED');
    const malformed = await submitLogs(t.api, agent, [logEntry(3)], { headers: { 'idempotency-key': 'é' } });
    expect(malformed.status).toBe(400);
    expect(malformed.body.error.details).toEqual([expect.objectContaining({ path: 'headers.idempotency-key' })]);
    expect(await countLogs(agent.deviceId)).toBe(1);
  });

  it('stores an upload under a key last used more than 24 hours ago, and answers its resend with the new reply', async () => {
    const agent = await enrollDevice(t.api, tenant, 'logs-key-expired');
    const headers = { 'idempotency-key': 'upload-expired' };
    expect((await submitLogs(t.api, agent, [logEntry(1)], { headers })).status).toBe(201);
    await t.db.admin.query(
      `UPDATE idempotency_keys SET created_at = now() - interval '25 hours'
        WHERE principal_type = 'agent' AND principal_id = :agentId::text AND idempotency_key = :digest::text`,
      { agentId: agent.agentId, digest: keyDigestOf(headers['idempotency-key']) },
    );
    const logs = [logEntry(2), logEntry(3)];
    expect(await submitLogs(t.api, agent, logs, { headers })).toMatchObject({ status: 201, body: { received: 2 } });
    const resent = await submitLogs(t.api, agent, logs, { headers });
    expect(resent).toMatchObject({ status: 201, body: { received: 2 } });
    expect(resent.headers.get('idempotent-replayed')).toBe('true');
    expect(await countLogs(agent.deviceId)).toBe(3);
  });

  it('answers an upload whose key another request committed while it ran with that reply, keeping none of its own change', async () => {
    const first = await enrollDevice(t.api, tenant, 'logs-race-a');
    const agent = await enrollDevice(t.api, tenant, 'logs-race-b');
    const logs = [logEntry(1), logEntry(2)];
    const key = 'upload-race';
    // The other request's reply, sealed under the key: the same upload by another agent.
    expect((await submitLogs(t.api, first, logs, { headers: { 'idempotency-key': key } })).status).toBe(201);
    // This agent's request hash of the upload (the key is no part of it), from the upload sent once before.
    expect((await submitLogs(t.api, agent, logs, { headers: { 'idempotency-key': 'upload-race-0' } })).status).toBe(
      201,
    );
    const keyRow = (agentId: string, of: string) =>
      t.db.admin
        .query<{ requestHash: string; reply: string }>(
          `SELECT request_hash AS "requestHash", reply FROM idempotency_keys
            WHERE principal_type = 'agent' AND principal_id = :agentId::text AND idempotency_key = :digest::text`,
          { agentId, digest: keyDigestOf(of) },
        )
        .then((r) => r.rows[0]!);
    const { reply } = await keyRow(first.agentId, key);
    const { requestHash } = await keyRow(agent.agentId, 'upload-race-0');
    const used = () =>
      t.db.admin
        .query<{ used: number }>(
          `SELECT used FROM agent_ingest_usage WHERE device_id = :deviceId::uuid AND kind = 'logs'`,
          { deviceId: agent.deviceId },
        )
        .then((r) => r.rows[0]!.used);
    const usedBefore = await used();

    // The other request's row, not committed yet: the upload's claim waits for it.
    let commit!: () => void;
    const committing = new Promise<void>((resolve) => {
      commit = resolve;
    });
    let inserted!: () => void;
    const held = new Promise<void>((resolve) => {
      inserted = resolve;
    });
    const other = t.db.admin.transaction(async (tx) => {
      await tx.query(
        `INSERT INTO idempotency_keys (principal_type, principal_id, idempotency_key, request_hash, reply)
         VALUES ('agent', :agentId::text, :digest::text, :requestHash::text, :reply::text)`,
        { agentId: agent.agentId, digest: keyDigestOf(key), requestHash, reply },
      );
      inserted();
      await committing;
    });
    await held;
    const upload = submitLogs(t.api, agent, logs, { headers: { 'idempotency-key': key } });
    // Polled until the upload waits for the other request's row; the test's timeout bounds it.
    for (;;) {
      const { rows } = await t.db.admin.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
      );
      if (rows[0]!.n > 0) break;
      await new Promise((resolve) => setImmediate(resolve));
    }
    commit();
    await other;

    const answered = await upload;
    expect(answered).toMatchObject({ status: 201, body: { received: 2 } });
    expect(answered.headers.get('idempotent-replayed')).toBe('true');
    expect(await countLogs(agent.deviceId)).toBe(2);
    expect(await used()).toBe(usedBefore);
  });

  it("keeps each agent's keys apart: another agent's same key stores its own upload", async () => {
    const one = await enrollDevice(t.api, tenant, 'logs-key-a');
    const two = await enrollDevice(t.api, tenant, 'logs-key-b');
    const headers = { 'idempotency-key': 'shared-key' };
    expect((await submitLogs(t.api, one, [logEntry(1)], { headers })).status).toBe(201);
    expect((await submitLogs(t.api, two, [logEntry(1)], { headers })).status).toBe(201);
    expect(await countLogs(one.deviceId)).toBe(1);
    expect(await countLogs(two.deviceId)).toBe(1);
  });
});
