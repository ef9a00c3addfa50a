/**
 * An organization wiped whole as database superuser (its entries, links, head and anchors deleted, triggers off)
 * is reported by the daily run, GET /audit-logs/verify and `npm run audit:verify -- --org` as kind
 * `organization-missing`, naming it: the anchors of the day before recorded it among the organizations with a chain.
 */
import { spawn } from 'node:child_process';
import { beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { logger } from '#shared/logger.ts';
import { appendAudit, tamper } from '#test/shared/audit/audit-rows.ts';
import { useAnchorSigning } from '#test/support/anchor-signing.ts';
import { useApi } from '#test/support/api.ts';
import { useCli } from '#test/support/cli.ts';
import { createTenant, type Tenant } from '#test/support/tenants.ts';

const t = useApi();
const cli = useCli('tools/audit-verify.ts');
const { daily } = useAnchorSigning(t, 'wipe');
beforeEach(() => {
  vi.spyOn(logger, 'error').mockImplementation(() => undefined);
});

function auditVerify(orgId: string): Promise<{ status: number | null; stdout: string }> {
  const child = spawn(process.execPath, cli.args(['--org', orgId]), {
    env: { ...process.env, DATABASE_URL: t.db.urls.admin },
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  let stdout = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  return new Promise((done) => child.once('close', (status) => done({ status, stdout })));
}

/** The superuser's wipe: every audit trace of the organization, anchors included. */
const wipe = (orgId: string) =>
  tamper(t.db.admin, async (tx) => {
    for (const table of ['audit_chain_links', 'audit_entries', 'audit_chain_heads', 'audit_anchors'])
      await tx.query(`DELETE FROM ${table} WHERE org_id = :orgId::uuid`, { orgId });
  });

/** What each verifier says about the organization: its kind of break, or 'ok'. */
async function verdicts(tenant: Tenant) {
  const run = await daily();
  const failure = run.integrity!.failures.find((f) => f.orgId === tenant.orgId);
  const api = await t.api.request('GET', `/api/v1/audit-logs/verify?orgId=${tenant.orgId}`, { token: tenant.orgToken });
  expect(api.status).toBe(200);
  const cli = await auditVerify(tenant.orgId);
  return {
    daily: failure?.kind ?? 'ok',
    api: api.body.ok ? 'ok' : api.body.firstBreak.kind,
    cli: cli.status === 0 ? 'ok' : (/kind ([\w-]+)/.exec(cli.stdout)?.[1] ?? `exit ${cli.status}`),
  };
}

describe('an organization wiped whole with its anchors', { timeout: 120_000 }, () => {
  let wiped: Tenant;
  let deleted: Tenant;
  let kept: Tenant;

  beforeAll(async () => {
    wiped = await createTenant(t.api, 'Wiped');
    deleted = await createTenant(t.api, 'Deleted');
    kept = await createTenant(t.api, 'Kept');
    await appendAudit(
      t.db.admin,
      [wiped, deleted, kept].flatMap((tenant) => [{ orgId: tenant.orgId }, { orgId: tenant.orgId }]),
    );
    const run = await daily();
    expect(run.integrity!.failures).toEqual([]);
    expect(run.integrity!.anchors.map((anchor) => anchor.orgId)).toEqual(
      expect.arrayContaining([wiped.orgId, deleted.orgId, kept.orgId]),
    );
  });

  it('is reported as organization-missing, naming it, by the daily run, the API and the CLI', async () => {
    await wipe(wiped.orgId);
    expect(await verdicts(wiped)).toEqual({
      daily: 'organization-missing',
      api: 'organization-missing',
      cli: 'organization-missing',
    });
    const api = await t.api.request('GET', `/api/v1/audit-logs/verify?orgId=${wiped.orgId}`, { token: wiped.orgToken });
    expect(api.body).toMatchObject({
      ok: false,
      firstBreak: {
        seq: 0,
        id: null,
        kind: 'organization-missing',
        meaning: expect.stringMatching(/organization\.delete/),
      },
    });
    const cli = await auditVerify(wiped.orgId);
    expect(cli).toMatchObject({ status: 1, stdout: expect.stringContaining(`break: organization ${wiped.orgId}`) });
    // The other organizations verify and are anchored again; the next day's run still reports the wiped one.
    expect(await verdicts(kept)).toEqual({ daily: 'ok', api: 'ok', cli: 'ok' });
    const nextDay = await daily();
    expect(nextDay.integrity!.failures).toEqual([
      expect.objectContaining({ orgId: wiped.orgId, seq: 0, kind: 'organization-missing' }),
    ]);
    expect(nextDay.integrity!.anchors.map((anchor) => anchor.orgId)).toContain(kept.orgId);
  });

  it('is not reported when an organization.delete audit row says the organization was deleted', async () => {
    await appendAudit(t.db.admin, [
      { orgId: kept.orgId, action: 'organization.delete', resourceType: 'organization', resourceId: deleted.orgId },
    ]);
    await wipe(deleted.orgId);
    expect(await verdicts(deleted)).toEqual({ daily: 'ok', api: 'ok', cli: 'ok' });
  });
});
