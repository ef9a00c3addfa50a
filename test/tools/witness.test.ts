/**
 * A database superuser who rewrites the trail thoroughly (rows, head and every anchor in the database) passes every
 * verifier that reads only the database. The anchors published to the outside witness catch it: the daily watch and
 * `npm run audit:verify -- --witness` report each rewrite with its kind.
 */
import { spawn } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { useAnchorWitness } from '#shared/audit/anchor-witness.ts';
import { armDelivery } from '#shared/audit-streams/arm.ts';
import { anchorWitnessAt } from '#shared/audit-streams/witness.ts';
import { directoryWitnessStore } from '#shared/audit-streams/witness-store.ts';
import type { Db } from '#shared/db/db.ts';
import { logger } from '#shared/logger.ts';
import {
  appendAudit,
  deleteChainRows,
  forgedRow,
  insertForged,
  readChain,
  tamper,
} from '#test/shared/audit/audit-rows.ts';
import { useAnchorSigning } from '#test/support/anchor-signing.ts';
import { useApi } from '#test/support/api.ts';
import { useCli } from '#test/support/cli.ts';
import { eventually } from '#test/support/live-agents.ts';
import { startSyslogReceiver } from '#test/support/siem-receivers.ts';
import { createTenant, type Tenant } from '#test/support/tenants.ts';

const t = useApi();
const cli = useCli('tools/audit-verify.ts');
const anchors = useAnchorSigning(t, 'witness');
const { key, daily } = anchors;
let witnessDir: string;

beforeAll(() => {
  witnessDir = join(anchors.dir, 'witness');
  useAnchorWitness(
    anchorWitnessAt(directoryWitnessStore(witnessDir), { publicKey: key, witnessed: (orgId) => armDelivery([orgId]) }),
  );
  process.env.AUDIT_WITNESS = witnessDir;
  process.env.OUTBOUND_ALLOW_LOOPBACK = 'true';
});
afterAll(() => {
  useAnchorWitness(undefined);
  delete process.env.AUDIT_WITNESS;
  delete process.env.OUTBOUND_ALLOW_LOOPBACK;
});
beforeEach(() => {
  vi.spyOn(logger, 'error').mockImplementation(() => undefined);
});

function auditVerify(args: string[]): Promise<{ status: number | null; stdout: string }> {
  const child = spawn(process.execPath, cli.args([...args, '--public-key', anchors.publicKeyFile]), {
    env: { ...process.env, DATABASE_URL: t.db.urls.admin },
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  let stdout = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  return new Promise((done) => child.once('close', (status) => done({ status, stdout })));
}

/** A tenant whose organization holds 6 more rows, anchored (and witnessed) by a daily run. */
async function witnessedTenant(name: string): Promise<Tenant> {
  const tenant = await createTenant(t.api, name);
  await appendAudit(
    t.db.admin,
    Array.from({ length: 6 }, () => ({ orgId: tenant.orgId })),
  );
  const run = await daily();
  expect(run.integrity!.anchors.some((anchor) => anchor.orgId === tenant.orgId)).toBe(true);
  return tenant;
}

/** The superuser also deletes every anchor of the organization in the database: only the witness keeps them. */
const dropAnchors = (tx: Db, orgId: string) =>
  tx.query('DELETE FROM audit_anchors WHERE org_id = :orgId::uuid', { orgId });

/** What the database alone says (the CLI without the witness), what the witness says, and what the daily watch says. */
async function verdicts(tenant: Tenant) {
  const alone = await auditVerify(['--org', tenant.orgId]);
  const witnessed = await auditVerify(['--org', tenant.orgId, '--witness', witnessDir]);
  const run = await daily();
  return {
    databaseAlone: alone.status === 0 ? 'ok' : `exit ${alone.status}`,
    witness:
      witnessed.status === 0 ? 'ok' : (/witness .*kind ([\w-]+)/.exec(witnessed.stdout)?.[1] ?? witnessed.stdout),
    daily: run.integrity!.failures.find((failure) => failure.orgId === tenant.orgId)?.kind ?? 'ok',
    anchoredAgain: run.integrity!.anchors.some((anchor) => anchor.orgId === tenant.orgId),
  };
}

describe('the outside witness', { timeout: 120_000 }, () => {
  it('holds every anchor, read-only, one file each; an intact chain extends them all', async () => {
    const tenant = await witnessedTenant('Intact');
    await appendAudit(t.db.admin, [{ orgId: tenant.orgId }]);
    await daily();
    const files = readdirSync(join(witnessDir, tenant.orgId));
    expect(files).toHaveLength(2);
    expect(files[0]).toMatch(/^0{10}\d{10}-\d{4}-\d\d-\d\dT\d{6}\d{3}Z\.json$/);
    expect(statSync(join(witnessDir, tenant.orgId, files[0]!)).mode & 0o222).toBe(0);
    const verified = await auditVerify(['--org', tenant.orgId, '--witness', witnessDir]);
    expect(verified.status).toBe(0);
    expect(verified.stdout).toContain(
      `witness: organization ${tenant.orgId}: the chain extends all 2 anchors witnessed at`,
    );
  });

  it('catches a head rolled back below the newest witnessed anchor, with the database anchors deleted', async () => {
    const tenant = await witnessedTenant('Rolled back');
    const chain = await readChain(t.db.admin, tenant.orgId);
    const kept = chain.at(-4)!;
    await tamper(t.db.admin, async (tx) => {
      await deleteChainRows(tx, 'org_id = :orgId::uuid AND seq > :seq::bigint', { orgId: tenant.orgId, seq: kept.seq });
      await tx.query(
        'UPDATE audit_chain_heads SET seq = :seq::bigint, checksum = :checksum::text WHERE org_id = :orgId::uuid',
        {
          orgId: tenant.orgId,
          seq: kept.seq,
          checksum: kept.checksum,
        },
      );
      await dropAnchors(tx, tenant.orgId);
    });
    expect(await verdicts(tenant)).toEqual({
      databaseAlone: 'ok',
      witness: 'head-rolled-back',
      daily: 'head-rolled-back',
      anchoredAgain: false,
    });
  });

  it('catches forged rows appended in place of the witnessed tail, the head moved on', async () => {
    const tenant = await witnessedTenant('Tail append');
    const chain = await readChain(t.db.admin, tenant.orgId);
    const kept = chain.at(-4)!;
    await tamper(t.db.admin, async (tx) => {
      await deleteChainRows(tx, 'org_id = :orgId::uuid AND seq > :seq::bigint', { orgId: tenant.orgId, seq: kept.seq });
      await dropAnchors(tx, tenant.orgId);
    });
    let prev = kept.checksum;
    let seq = kept.seq;
    for (; seq < chain.at(-1)!.seq + 3; ) {
      seq += 1;
      const row = forgedRow(tenant.orgId, seq, prev);
      await insertForged(t.db.admin, row);
      prev = row.checksum;
    }
    await tamper(t.db.admin, (tx) =>
      tx.query(
        'UPDATE audit_chain_heads SET seq = :seq::bigint, checksum = :checksum::text WHERE org_id = :orgId::uuid',
        {
          orgId: tenant.orgId,
          seq,
          checksum: prev,
        },
      ),
    );
    expect(await verdicts(tenant)).toEqual({
      databaseAlone: 'ok',
      witness: 'head-not-extending',
      daily: 'head-not-extending',
      anchoredAgain: false,
    });
  });

  it('catches an organization wiped whole, with its anchors and the record of who was anchored', async () => {
    const tenant = await witnessedTenant('Wiped');
    await tamper(t.db.admin, async (tx) => {
      for (const table of ['audit_chain_links', 'audit_entries', 'audit_chain_heads', 'audit_anchors'])
        await tx.query(`DELETE FROM ${table} WHERE org_id = :orgId::uuid`, { orgId: tenant.orgId });
      await tx.query('UPDATE audit_anchor_org_sets SET org_ids = array_remove(org_ids, :orgId::uuid)', {
        orgId: tenant.orgId,
      });
    });
    const verdict = await verdicts(tenant);
    expect(verdict.witness).toBe('organization-wiped');
    expect(verdict.daily).toBe('organization-wiped');
  });

  it('catches the rows under the witnessed head cut while the head still claims them', async () => {
    const tenant = await witnessedTenant('Truncated');
    const chain = await readChain(t.db.admin, tenant.orgId);
    await tamper(t.db.admin, async (tx) => {
      await deleteChainRows(tx, 'org_id = :orgId::uuid AND seq > :seq::bigint', {
        orgId: tenant.orgId,
        seq: chain.at(-3)!.seq,
      });
      await dropAnchors(tx, tenant.orgId);
    });
    const witnessed = await auditVerify(['--org', tenant.orgId, '--witness', witnessDir]);
    expect(witnessed.status).toBe(1);
    expect(witnessed.stdout).toMatch(/witness .*kind tail-truncated/);
  });

  it('is listed by GET /audit-logs/witness, and each witnessed anchor is streamed as an event after the rows it covers', async () => {
    const tenant = await createTenant(t.api, 'Streamed anchors');
    const receiver = await startSyslogReceiver();
    try {
      const created = await t.api.request('POST', '/api/v1/audit-streams', {
        token: tenant.partnerToken,
        body: { orgId: tenant.orgId, name: 'SIEM', type: 'syslog-tcp', format: 'ndjson', endpoint: receiver.endpoint },
      });
      expect(created.status).toBe(201);
      await appendAudit(t.db.admin, [{ orgId: tenant.orgId }, { orgId: tenant.orgId }]);
      const run = await daily();
      const anchor = run.integrity!.anchors.find((each) => each.orgId === tenant.orgId)!;
      // The anchor comes after the row it covers (the chain's record of the first anchor may come before or after it).
      await eventually(() => receiver.messages.some((frame) => frame.includes('"type":"anchor"')));
      const events = receiver.messages.map((frame) => JSON.parse(frame.slice(frame.indexOf('{"type"'))));
      const at = events.findIndex((event) => event.type === 'anchor');
      expect(events[at]).toEqual({
        type: 'anchor',
        orgId: tenant.orgId,
        seq: anchor.seq,
        checksum: anchor.checksum,
        keyId: anchor.keyId,
        signature: anchor.signature,
        at: anchor.anchoredAt,
      });
      const covered = events.findIndex((event) => event.type === 'audit' && event.seq === anchor.seq);
      expect(covered).toBeGreaterThanOrEqual(0);
      expect(covered).toBeLessThan(at);

      const listed = await t.api.request('GET', `/api/v1/audit-logs/witness?orgId=${tenant.orgId}`, {
        token: tenant.orgToken,
      });
      expect(listed.status).toBe(200);
      expect(listed.body).toEqual(
        expect.objectContaining({ orgId: tenant.orgId, location: witnessDir, lastPublishedAt: anchor.anchoredAt }),
      );
      expect(listed.body.anchors).toEqual([expect.objectContaining({ seq: anchor.seq, signature: anchor.signature })]);
      expect(listed.body.ageSeconds).toBeGreaterThanOrEqual(0);
      const other = await createTenant(t.api, 'Nosy');
      const refused = await t.api.request('GET', `/api/v1/audit-logs/witness?orgId=${tenant.orgId}`, {
        token: other.orgToken,
      });
      expect(refused.status).toBe(404);
    } finally {
      await receiver.close();
    }
  });
});
