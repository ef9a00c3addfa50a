import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { raiseScriptAlert } from '#shared/alerts/raise.ts';
import type { Severity } from '#shared/alerts/schemas.ts';
import { appDb } from '#shared/db/client.ts';
import { signature } from '#shared/notifications/formats.ts';
import { escalate, renotify } from '#shared/notifications/notify.ts';
import { attemptNotification, retryDelaysSeconds, sendDigest, tell } from '#shared/notifications/send.ts';
import { useApi } from '#test/support/api.ts';
import { eventually } from '#test/support/live-agents.ts';
import { type ChannelReceivers, startChannelReceivers } from '#test/support/notification-receivers.ts';
import { auditRowsOf } from '#test/support/scripts.ts';
import { createTenant, enrollDevice, type Tenant } from '#test/support/tenants.ts';

// The receivers listen on 127.0.0.1: the local-development allowance for loopback destinations.
process.env.OUTBOUND_ALLOW_LOOPBACK = 'true';

const t = useApi();
let tenant: Tenant;
let other: Tenant;
let receivers: ChannelReceivers;
let mailDir: string;
let device: { deviceId: string };
beforeAll(async () => {
  mailDir = await mkdtemp(join(tmpdir(), 'logbook-mail-'));
  process.env.MAIL_DIR = mailDir;
  tenant = await createTenant(t.api, 'Initech');
  other = await createTenant(t.api, 'Umbrella');
  receivers = await startChannelReceivers();
  device = await enrollDevice(t.api, tenant, 'notify-host');
});
afterAll(async () => {
  await receivers.close();
  await rm(mailDir, { recursive: true, force: true });
  delete process.env.MAIL_DIR;
});

/** Raises a new alert on the tenant's device as a failed script run does (each call its own script: a new alert). */
async function raise(severity: Severity, target = tenant, deviceId = device.deviceId): Promise<string> {
  const scriptId = randomUUID();
  await raiseScriptAlert(
    appDb(),
    {
      runItemId: randomUUID(),
      runId: randomUUID(),
      orgId: target.orgId,
      partnerId: target.partnerId,
      deviceId,
      hostname: 'notify-host',
      scriptId,
      scriptName: `Check ${scriptId.slice(0, 6)}`,
      scriptVersion: 1,
      exitCode: 2,
    },
    severity,
  );
  const { rows } = await t.db.admin.query<{ id: string }>('SELECT id FROM alerts WHERE source_key = :key::text', {
    key: `script:${scriptId}`,
  });
  return rows[0]!.id;
}

async function channel(body: Record<string, unknown>, token = tenant.orgToken) {
  const reply = await t.api.request('POST', '/api/v1/notification-channels', {
    token,
    body: { orgId: tenant.orgId, name: `Channel ${randomUUID().slice(0, 8)}`, ...body },
  });
  expect(reply.status, JSON.stringify(reply.body)).toBe(201);
  return reply.body as { id: string; secret?: string };
}

const setDefaults = (body: Record<string, unknown>, token = tenant.orgToken) =>
  t.api.request('PUT', `/api/v1/orgs/organizations/${tenant.orgId}/notification-defaults`, { token, body });

const notificationsOf = async (alertId: string) =>
  (await t.api.request('GET', `/api/v1/alerts/${alertId}/notifications`, { token: tenant.orgToken })).body
    .data as any[];

describe('channels', () => {
  it('a webhook channel gets a generated secret shown once, sealed at rest, and is audited', async () => {
    const created = await channel({ type: 'webhook', config: { url: receivers.url('hooks') } });
    expect(created.secret).toMatch(/^[\w-]{43}$/);
    const read = await t.api.request('GET', `/api/v1/notification-channels/${created.id}`, { token: tenant.orgToken });
    expect(read.body).toMatchObject({ type: 'webhook', hasSecret: true, availability: 'organization' });
    expect(read.body.secret).toBeUndefined();
    const stored = await t.db.admin.query<{ secret: string; sealed: boolean }>(
      'SELECT secret, secret_sealed AS sealed FROM notification_channels WHERE id = :id::uuid',
      { id: created.id },
    );
    expect(stored.rows[0]!.sealed).toBe(true);
    expect(stored.rows[0]!.secret).not.toContain(created.secret!);
    expect(await auditRowsOf(t.db.admin, 'notification_channel.create', created.id)).toHaveLength(1);
  });

  it.each([
    [{ type: 'email', config: { to: ['not-an-address'] } }, 'body.config.to.0'],
    [{ type: 'slack', config: { url: 'https://10.0.0.5/hook' } }, 'body.config.url'],
    [{ type: 'teams', config: {} }, 'body.config.url'],
    [{ type: 'pagerduty', config: {} }, 'body.secret'],
    [
      { type: 'slack', config: { url: 'https://hooks.example.com/x' }, throttle: { max: 0, windowMinutes: 5 } },
      'body.throttle.max',
    ],
  ])('refuses %o naming %s, storing nothing', async (body, path) => {
    const before = await t.db.admin.query('SELECT count(*)::int AS n FROM notification_channels');
    const reply = await t.api.request('POST', '/api/v1/notification-channels', {
      token: tenant.orgToken,
      body: { orgId: tenant.orgId, name: 'Bad', ...body },
    });
    expect(reply.status).toBe(400);
    expect(JSON.stringify(reply.body.error.details)).toContain(path);
    expect((await t.db.admin.query('SELECT count(*)::int AS n FROM notification_channels')).rows).toEqual(before.rows);
  });

  it("another tenant's channel is 404, and its id cannot be named in defaults", async () => {
    const theirs = await channel(
      { orgId: other.orgId, type: 'slack', config: { url: receivers.url('theirs') } },
      other.orgToken,
    );
    const read = await t.api.request('GET', `/api/v1/notification-channels/${theirs.id}`, { token: tenant.orgToken });
    expect(read.status).toBe(404);
    const put = await setDefaults({ channels: { high: [theirs.id] } });
    expect(put.status).toBe(400);
    expect(put.body.error.details[0].path).toBe('body.channels.high');
  });

  it('the test route sends now and answers with the log entry: Slack format, a failing receiver, an e-mail file', async () => {
    const slack = await channel({ type: 'slack', config: { url: receivers.url('slack-test') } });
    const sent = await t.api.request('POST', `/api/v1/notification-channels/${slack.id}/test`, {
      token: tenant.orgToken,
    });
    expect(sent.body).toMatchObject({ event: 'channel.test', status: 'delivered', attempts: 1 });
    const [message] = receivers.received('slack-test');
    expect(message!.json.text).toContain('test notification');
    expect(message!.json.blocks[0].type).toBe('header');

    const failing = await channel({ type: 'teams', config: { url: receivers.url('fail-test') } });
    const failed = await t.api.request('POST', `/api/v1/notification-channels/${failing.id}/test`, {
      token: tenant.orgToken,
    });
    expect(failed.body).toMatchObject({ status: 'failed', lastError: 'HTTP 503', attempts: 1 });

    const email = await channel({ type: 'email', config: { to: ['oncall@initech.example'] } });
    const mailed = await t.api.request('POST', `/api/v1/notification-channels/${email.id}/test`, {
      token: tenant.orgToken,
    });
    expect(mailed.body.status).toBe('delivered');
    const text = await readFile(join(mailDir, `${mailed.body.id}.eml`), 'utf8');
    expect(text).toContain('To: oncall@initech.example');
    expect(text).toMatch(/Subject: Logbook test notification/);
  });
});

describe('alerts reach their channels', () => {
  let webhook: { id: string; secret?: string };
  let pagerduty: { id: string };
  let teams: { id: string };
  let email: { id: string };
  beforeAll(async () => {
    webhook = await channel({ type: 'webhook', config: { url: receivers.url('webhook') } });
    pagerduty = await channel({
      type: 'pagerduty',
      config: { url: receivers.url('pagerduty') },
      secret: 'routing-key-0123456789',
    });
    // The partner's channel: it serves every organization of the partner.
    teams = await channel(
      { orgId: undefined, availability: 'partner', type: 'teams', config: { url: receivers.url('teams') } },
      tenant.partnerToken,
    );
    email = await channel({ type: 'email', config: { to: ['noc@initech.example'] } });
    // The partner's defaults name Teams for high; the organization's replace critical only.
    const partner = await t.api.request('PUT', `/api/v1/partners/${tenant.partnerId}/notification-defaults`, {
      token: tenant.partnerToken,
      body: { channels: { high: [teams.id], critical: [teams.id] } },
    });
    expect(partner.status, JSON.stringify(partner.body)).toBe(200);
    const own = await setDefaults({ channels: { critical: [webhook.id, pagerduty.id, email.id] } });
    expect(own.status, JSON.stringify(own.body)).toBe(200);
    expect(own.body.inherited).toEqual(['low', 'medium', 'high', 'escalationPolicyId']);
    expect(own.body.channels.high).toEqual([teams.id]);
  });

  it('a critical alert goes to the organization’s channels, each in its format, logged per channel', async () => {
    const alertId = await raise('critical');
    await eventually(async () => (await notificationsOf(alertId)).filter((n) => n.status === 'delivered').length === 3);
    const [hook] = receivers.received('webhook').filter((r) => r.json.alert?.id === alertId);
    expect(hook!.json).toMatchObject({ event: 'alert.created', alert: { id: alertId, severity: 'critical' } });
    expect(hook!.headers['x-logbook-signature']).toBe(
      signature(webhook.secret!, hook!.headers['x-logbook-timestamp']!, hook!.body),
    );
    const [trigger] = receivers.received('pagerduty').filter((r) => r.json.dedup_key === `logbook-alert-${alertId}`);
    expect(trigger!.json).toMatchObject({
      routing_key: 'routing-key-0123456789',
      event_action: 'trigger',
      payload: { severity: 'critical', source: 'notify-host' },
    });
    const mail = await readFile(
      join(mailDir, `${(await notificationsOf(alertId)).find((n) => n.channelType === 'email').id}.eml`),
      'utf8',
    );
    expect(mail).toContain('Subject: [CRITICAL]');
    // Teams is the partner's choice for critical, which the organization replaced.
    expect(receivers.received('teams').some((r) => JSON.stringify(r.json).includes(alertId))).toBe(false);

    // Acknowledging follows the incident on PagerDuty, with the same dedup key.
    await t.api.request('POST', `/api/v1/alerts/${alertId}/acknowledge`, { token: tenant.orgToken, body: {} });
    await eventually(() =>
      receivers
        .received('pagerduty')
        .some((r) => r.json.dedup_key === `logbook-alert-${alertId}` && r.json.event_action === 'acknowledge'),
    );
  });

  it('a high alert takes the partner’s channels where the organization has none of its own', async () => {
    const alertId = await raise('high');
    await eventually(() => receivers.received('teams').some((r) => JSON.stringify(r.json).includes(alertId)));
    const card = receivers.received('teams').find((r) => JSON.stringify(r.json).includes(alertId))!.json;
    expect(card.attachments[0].contentType).toBe('application/vnd.microsoft.card.adaptive');
    expect(card.attachments[0].content.type).toBe('AdaptiveCard');
  });

  it('a low alert with no channel for its severity tells nobody', async () => {
    const alertId = await raise('low');
    const alert = await t.api.request('GET', `/api/v1/alerts/${alertId}`, { token: tenant.orgToken });
    expect(alert.body.suppressedBy).toBeNull();
    expect(await notificationsOf(alertId)).toEqual([]);
  });
});

describe('retries, throttle and digest, escalation', () => {
  it('a failing destination is retried with backoff and then failed for good, audited', async () => {
    const failing = await channel({ type: 'slack', config: { url: receivers.url('fail-retry') } });
    await setDefaults({ channels: { medium: [failing.id] } });
    const alertId = await raise('medium');
    await eventually(async () => (await notificationsOf(alertId))[0]?.attempts === 1);
    let [entry] = await notificationsOf(alertId);
    expect(entry).toMatchObject({ status: 'pending', lastError: 'HTTP 503' });
    // Each later attempt is driven at its due time instead of waiting for it.
    for (let n = 1; n <= retryDelaysSeconds.length; n++) {
      [entry] = await notificationsOf(alertId);
      expect(await attemptNotification(appDb(), entry.id, new Date(entry.nextAttemptAt))).toBe(
        n === retryDelaysSeconds.length ? 'failed' : 'retrying',
      );
    }
    [entry] = await notificationsOf(alertId);
    expect(entry).toMatchObject({ status: 'failed', attempts: retryDelaysSeconds.length + 1 });
    expect(entry.log).toHaveLength(retryDelaysSeconds.length + 1);
    const audited = await auditRowsOf(t.db.admin, 'alert.notification.failed', alertId);
    expect(audited).toMatchObject([{ actorType: 'system', result: 'failure' }]);
  });

  it('over its throttle a channel records notifications throttled (audited) and sends them as one digest', async () => {
    const throttled = await channel({
      type: 'slack',
      config: { url: receivers.url('throttled') },
      throttle: { max: 2, windowMinutes: 60 },
    });
    await setDefaults({ channels: { medium: [throttled.id] } });
    const alertIds: string[] = [];
    for (let n = 0; n < 5; n++) alertIds.push(await raise('medium'));
    const statuses = async () => (await Promise.all(alertIds.map(notificationsOf))).map((list) => list[0]?.status);
    await eventually(
      async () =>
        (await statuses()).filter((s) => s === 'delivered').length === 2 &&
        (await statuses()).filter((s) => s === 'throttled').length === 3,
    );
    expect(receivers.received('throttled')).toHaveLength(2);
    const held = alertIds.filter((_, n) => n >= 2);
    for (const id of held)
      await eventually(async () => (await auditRowsOf(t.db.admin, 'alert.notification.throttled', id)).length === 1);
    // The window reopens later: the digest job is run now rather than waited for.
    expect(await sendDigest(appDb(), throttled.id)).toBe(3);
    await eventually(() => receivers.received('throttled').length === 3);
    const digest = receivers.received('throttled')[2]!.json;
    expect(digest.text).toContain('3 notifications held back');
    const log = await notificationsOf(held[0]!);
    expect(log.map((n) => [n.event, n.status])).toEqual([
      ['alert.created', 'digested'],
      ['alert.digest', 'delivered'],
    ]);
    expect(await sendDigest(appDb(), throttled.id)).toBe(0);
  });

  it('notices told at once on one channel are counted together: never past its throttle, each recorded once', async () => {
    const busy = await channel({
      type: 'slack',
      config: { url: receivers.url('busy') },
      throttle: { max: 3, windowMinutes: 60 },
    });
    const alertId = await raise('low');
    const notice = (step: number) => ({
      channelId: busy.id,
      alertId,
      orgId: tenant.orgId,
      event: 'alert.escalated' as const,
      step,
      dedupeKey: `${alertId}:${busy.id}:alert.escalated:${step}`,
      body: {
        alert: {
          id: alertId,
          orgId: tenant.orgId,
          orgName: 'Initech',
          deviceId: device.deviceId,
          hostname: 'notify-host',
          source: { type: 'script' },
          severity: 'low',
          title: 'Busy',
          status: 'open',
          details: {},
          createdAt: new Date().toISOString(),
        },
        step,
      },
    });
    // The first goes at once; the rest wait for it and are recorded together, in the order they came.
    const told = await Promise.all([0, 1, 2, 3, 4, 5, 0, 1].map((step) => tell(appDb(), notice(step))));
    expect(told).toEqual([
      'queued',
      'queued',
      'queued',
      'throttled',
      'throttled',
      'throttled',
      'duplicate',
      'duplicate',
    ]);
    const { rows } = await t.db.admin.query<{ step: number; status: string }>(
      `SELECT step, status FROM notifications WHERE channel_id = :channelId::uuid ORDER BY step`,
      { channelId: busy.id },
    );
    expect(rows.map((row) => [row.step, row.status === 'throttled' ? 'throttled' : 'told'])).toEqual([
      [0, 'told'],
      [1, 'told'],
      [2, 'told'],
      [3, 'throttled'],
      [4, 'throttled'],
      [5, 'throttled'],
    ]);
    await eventually(
      async () =>
        (await auditRowsOf(t.db.admin, 'alert.notification.throttled', alertId)).filter(
          (row) => row.details.channelId === busy.id,
        ).length === 3,
    );
    expect(
      (await auditRowsOf(t.db.admin, 'alert.notification.throttled', alertId))
        .filter((row) => row.details.channelId === busy.id)
        .map((row) => row.details.step),
    ).toEqual([3, 4, 5]);
    await eventually(() => receivers.received('busy').length === 3);
  });

  it('an escalation step tells its channels while nobody acknowledged; acknowledging stops the next step', async () => {
    const first = await channel({ type: 'slack', config: { url: receivers.url('escalate-1') } });
    const second = await channel({ type: 'slack', config: { url: receivers.url('escalate-2') } });
    const policy = await t.api.request('POST', '/api/v1/escalation-policies', {
      token: tenant.orgToken,
      body: {
        orgId: tenant.orgId,
        name: 'Night shift',
        steps: [
          { afterMinutes: 15, channelIds: [first.id] },
          { afterMinutes: 30, channelIds: [second.id] },
        ],
      },
    });
    expect(policy.status, JSON.stringify(policy.body)).toBe(201);
    expect(await auditRowsOf(t.db.admin, 'escalation_policy.create', policy.body.id)).toHaveLength(1);
    const alertId = await raise('high');
    const job = { alertId, policyId: policy.body.id, since: Date.now() };
    expect(await escalate(appDb(), { ...job, step: 0 })).toBe('sent');
    // Twice armed, once told.
    expect(await escalate(appDb(), { ...job, step: 0 })).toBe('sent');
    await eventually(() => receivers.received('escalate-1').length === 1);
    expect(receivers.received('escalate-1')[0]!.json.text).toContain('escalated');
    await t.api.request('POST', `/api/v1/alerts/${alertId}/acknowledge`, { token: tenant.orgToken, body: {} });
    expect(await escalate(appDb(), { ...job, step: 1 })).toBe('stopped');
    expect(receivers.received('escalate-2')).toEqual([]);
  });

  it("a rule's renotify interval tells its channels again while the alert is open, once per reminder", async () => {
    const reminded = await channel({ type: 'slack', config: { url: receivers.url('renotify') } });
    const alertId = await raise('high');
    const job = { alertId, item: { channels: [reminded.id], renotifyMinutes: 30 }, round: 1 };
    expect(await renotify(appDb(), job)).toBe('sent');
    // The same reminder armed twice is told once.
    expect(await renotify(appDb(), job)).toBe('sent');
    await eventually(() => receivers.received('renotify').length === 1);
    expect(receivers.received('renotify')[0]!.json.text).toContain('still firing (reminder 1)');
    await t.api.request('POST', `/api/v1/alerts/${alertId}/acknowledge`, { token: tenant.orgToken, body: {} });
    expect(await renotify(appDb(), { ...job, round: 2 })).toBe('stopped');
    expect(receivers.received('renotify')).toHaveLength(1);
  });

  it('refuses steps naming a channel the owner does not have, and steps out of order', async () => {
    const foreign = await t.api.request('POST', '/api/v1/escalation-policies', {
      token: tenant.orgToken,
      body: { orgId: tenant.orgId, name: 'X', steps: [{ afterMinutes: 5, channelIds: [randomUUID()] }] },
    });
    expect(foreign.status).toBe(400);
    expect(foreign.body.error.details[0].path).toBe('body.steps.0.channelIds');
    const order = await t.api.request('POST', '/api/v1/escalation-policies', {
      token: tenant.orgToken,
      body: {
        orgId: tenant.orgId,
        name: 'Y',
        steps: [
          { afterMinutes: 10, channelIds: [randomUUID()] },
          { afterMinutes: 5, channelIds: [randomUUID()] },
        ],
      },
    });
    expect(order.status).toBe(400);
  });
});

describe('bulk acknowledge and resolve', () => {
  it('answers an outcome per id; another tenant’s alert reads like an unknown one', async () => {
    const [a, b] = [await raise('low'), await raise('low')];
    const theirs = await raise('low', other, (await enrollDevice(t.api, other, 'other-host')).deviceId);
    await t.api.request('POST', `/api/v1/alerts/${b}/resolve`, { token: tenant.orgToken, body: {} });
    const unknown = randomUUID();
    const reply = await t.api.request('POST', '/api/v1/alerts/acknowledge', {
      token: tenant.orgToken,
      body: { alertIds: [a, b, theirs, unknown] },
    });
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual({
      results: [
        { alertId: a, outcome: 'acknowledged', status: 'acknowledged' },
        { alertId: b, outcome: 'invalid_state', status: 'resolved' },
        { alertId: theirs, outcome: 'not_found', status: null },
        { alertId: unknown, outcome: 'not_found', status: null },
      ],
      changed: 1,
    });
    expect(await auditRowsOf(t.db.admin, 'alert.acknowledge', a)).toHaveLength(1);
    const resolved = await t.api.request('POST', '/api/v1/alerts/resolve', {
      token: tenant.orgToken,
      body: { alertIds: [a] },
    });
    expect(resolved.body.changed).toBe(1);
    const tooMany = await t.api.request('POST', '/api/v1/alerts/resolve', {
      token: tenant.orgToken,
      body: { alertIds: Array.from({ length: 501 }, () => randomUUID()) },
    });
    expect(tooMany.status).toBe(400);
  });
});
