/**
 * An attacker with database superuser (triggers off) tampers with a chain that the daily
 * run has anchored, and every verifier reports it with the same kind: the daily run, GET /audit-logs/verify,
 * `npm run audit:verify -- --org` and the offline check of the JSON export (`--file`).
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import type { ChainBreakKind } from '#shared/audit/chain-break.ts';
import { logger } from '#shared/logger.ts';
import {
  appendAudit,
  deleteChainRows,
  forgedRow,
  insertForged,
  readChain,
  tamper,
  updateChainRows,
} from '#test/shared/audit/audit-rows.ts';
import { useAnchorSigning } from '#test/support/anchor-signing.ts';
import { useApi } from '#test/support/api.ts';
import { useCli } from '#test/support/cli.ts';
import { createTenant, orgUser, type Tenant } from '#test/support/tenants.ts';

const t = useApi();
const cli = useCli('tools/audit-verify.ts');
const anchors = useAnchorSigning(t, 'tampering');
// The daily run logs every break it finds (those of earlier tests too).
beforeEach(() => {
  vi.spyOn(logger, 'error').mockImplementation(() => undefined);
});

const { daily } = anchors;

function auditVerify(args: string[]): Promise<{ status: number | null; stdout: string }> {
  const child = spawn(process.execPath, cli.args(args), {
    env: { ...process.env, DATABASE_URL: t.db.urls.admin },
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  let stdout = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  return new Promise((done) => child.once('close', (status) => done({ status, stdout })));
}

/** A tenant whose organization holds `rows` more rows, verified and anchored by a daily run. */
async function anchoredTenant(name: string, rows = 6): Promise<Tenant> {
  const tenant = await createTenant(t.api, name);
  await appendAudit(
    t.db.admin,
    Array.from({ length: rows }, () => ({ orgId: tenant.orgId })),
  );
  const run = await daily();
  expect(run.integrity!.anchors.some((anchor) => anchor.orgId === tenant.orgId)).toBe(true);
  return tenant;
}

/** What each verifier says about the tenant's chain: its kind of break, or 'ok'. */
async function verdicts(tenant: Tenant) {
  const run = await daily();
  const failure = run.integrity!.failures.find((f) => f.orgId === tenant.orgId);
  const api = await t.api.request('GET', `/api/v1/audit-logs/verify?orgId=${tenant.orgId}`, { token: tenant.orgToken });
  expect(api.status).toBe(200);
  const cli = await auditVerify(['--org', tenant.orgId, '--public-key', anchors.publicKeyFile]);
  const exported = await t.api.request('GET', '/api/v1/audit-logs/export?format=json', { token: tenant.orgToken });
  expect(exported.status).toBe(200);
  const file = join(anchors.dir, `${tenant.orgId}.json`);
  writeFileSync(file, typeof exported.body === 'string' ? exported.body : JSON.stringify(exported.body));
  const offline = await auditVerify(['--file', file, '--public-key', anchors.publicKeyFile]);
  const kindIn = (output: { status: number | null; stdout: string }) =>
    output.status === 0 ? 'ok' : (/kind (\w+)/.exec(output.stdout)?.[1] ?? `exit ${output.status}`);
  return {
    daily: failure?.kind ?? 'ok',
    api: api.body.ok ? 'ok' : api.body.firstBreak.kind,
    cli: kindIn(cli),
    offline: kindIn(offline),
    anchored: run.integrity!.anchors.some((anchor) => anchor.orgId === tenant.orgId),
  };
}

const everywhere = (kind: ChainBreakKind | 'ok') => ({ daily: kind, api: kind, cli: kind, offline: kind });

describe('tampering as database superuser, reported by every verifier with the same kind', () => {
  it('an intact anchored chain, and one cut by signed retention, verify everywhere and are anchored again', async () => {
    const intact = await anchoredTenant('Intact');
    expect(await verdicts(intact)).toEqual({ ...everywhere('ok'), anchored: true });

    // An organization whose oldest rows are past a 10-day policy: created in the database, so they come first.
    const { rows } = await t.db.admin.query<{ partnerId: string; orgId: string }>(
      `WITH partner AS (INSERT INTO partners (name) VALUES ('Pruned MSP') RETURNING id)
       INSERT INTO organizations (partner_id, name) SELECT id, 'Pruned Ltd' FROM partner
       RETURNING partner_id::text AS "partnerId", id::text AS "orgId"`,
    );
    const { partnerId, orgId } = rows[0]!;
    await t.db.admin.query('INSERT INTO audit_retention_policies (org_id, retention_days) VALUES (:orgId::uuid, 10)', {
      orgId,
    });
    const old = new Date(Date.now() - 30 * 86_400_000).toISOString();
    await appendAudit(t.db.admin, [{ orgId, timestamp: old }, { orgId, timestamp: old }, { orgId }]);
    const pruned = { orgId, orgToken: await orgUser(partnerId, orgId) } as Tenant;
    const run = await daily();
    expect(run.organizations.find((org) => org.orgId === pruned.orgId)?.rowsDeleted).toBeGreaterThan(0);
    expect(await verdicts(pruned)).toEqual({ ...everywhere('ok'), anchored: true });
  });

  it('a row altered before the newest anchor: altered, and no anchor is signed over it', async () => {
    const tenant = await anchoredTenant('Altered');
    await tamper(t.db.admin, (tx) =>
      updateChainRows(tx, `action = 'device.view'`, `org_id = :orgId::uuid AND seq = 3`, {
        orgId: tenant.orgId,
      }),
    );
    expect(await verdicts(tenant)).toEqual({ ...everywhere('altered'), anchored: false });
  });

  it('a row deleted before the newest anchor: missing', async () => {
    const tenant = await anchoredTenant('Deleted');
    await tamper(t.db.admin, (tx) => deleteChainRows(tx, 'org_id = :orgId::uuid AND seq = 3', { orgId: tenant.orgId }));
    expect(await verdicts(tenant)).toEqual({ ...everywhere('missing'), anchored: false });
  });

  it('a prefix deleted with a matching checkpoint forged: checkpoint', async () => {
    const tenant = await anchoredTenant('Forged checkpoint');
    const chain = await readChain(t.db.admin, tenant.orgId);
    const last = chain[2]!;
    await tamper(t.db.admin, async (tx) => {
      await deleteChainRows(tx, 'org_id = :orgId::uuid AND seq <= :seq::bigint', {
        orgId: tenant.orgId,
        seq: last.seq,
      });
      await tx.query(
        'INSERT INTO audit_chain_checkpoints (org_id, seq, checksum) VALUES (:orgId::uuid, :seq::bigint, :checksum::text)',
        { orgId: tenant.orgId, seq: last.seq, checksum: last.checksum },
      );
    });
    expect(await verdicts(tenant)).toEqual({ ...everywhere('checkpoint'), anchored: false });
  });

  it('every anchor of the organization deleted: anchor (the chain records that it was anchored)', async () => {
    const tenant = await anchoredTenant('Unanchored');
    await tamper(t.db.admin, (tx) =>
      tx.query('DELETE FROM audit_anchors WHERE org_id = :orgId::uuid', { orgId: tenant.orgId }),
    );
    expect(await verdicts(tenant)).toEqual({ ...everywhere('anchor'), anchored: false });
  });

  it('a consistent rewrite with recomputed checksums and head: anchor, not tail truncation', async () => {
    const tenant = await anchoredTenant('Rewritten');
    const chain = await readChain(t.db.admin, tenant.orgId);
    const kept = chain.filter((row) => row.seq < 3);
    await tamper(t.db.admin, (tx) =>
      deleteChainRows(tx, 'org_id = :orgId::uuid AND seq >= 3', { orgId: tenant.orgId }),
    );
    let prev = kept.at(-1)!.checksum;
    for (let seq = 3; seq <= chain.at(-1)!.seq; seq++) {
      const row = forgedRow(tenant.orgId, seq, prev);
      await insertForged(t.db.admin, row);
      prev = row.checksum;
    }
    await tamper(t.db.admin, (tx) =>
      tx.query('UPDATE audit_chain_heads SET checksum = :checksum::text WHERE org_id = :orgId::uuid', {
        orgId: tenant.orgId,
        checksum: prev,
      }),
    );
    expect(await verdicts(tenant)).toEqual({ ...everywhere('anchor'), anchored: false });
  });

  it('a tail deleted and the head rolled back below the newest anchor: anchor', async () => {
    const tenant = await anchoredTenant('Truncated');
    const chain = await readChain(t.db.admin, tenant.orgId);
    const newHead = chain.at(-4)!;
    await tamper(t.db.admin, async (tx) => {
      await deleteChainRows(tx, 'org_id = :orgId::uuid AND seq > :seq::bigint', {
        orgId: tenant.orgId,
        seq: newHead.seq,
      });
      await tx.query(
        'UPDATE audit_chain_heads SET seq = :seq::bigint, checksum = :checksum::text WHERE org_id = :orgId::uuid',
        { orgId: tenant.orgId, seq: newHead.seq, checksum: newHead.checksum },
      );
    });
    expect(await verdicts(tenant)).toEqual({ ...everywhere('anchor'), anchored: false });
  });
});
