import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '#infra/local/free-port.ts';
import { retentionAction } from '#shared/audit/retention.ts';
import { verifyChain } from '#shared/audit/verify.ts';
import { appendAudit, readChain } from '#test/shared/audit/audit-rows.ts';
import { useApi } from '#test/support/api.ts';
import { useCli } from '#test/support/cli.ts';
import { createTenant, type Tenant } from '#test/support/tenants.ts';

const t = useApi();
const cli = useCli('tools/retention.ts');
let tenant: Tenant;
beforeAll(async () => {
  tenant = await createTenant(t.api, 'Rehearsal');
});

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `npm run retention`'s entry point against this file's database. Unless a test says otherwise it has only
 * DATABASE_URL, as on a developer's machine, and derives the audit-admin login from it as `npm start` does.
 */
function retention(args: string[], env: NodeJS.ProcessEnv = {}, cwd?: string): Promise<Run> {
  const childEnv: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: t.db.urls.admin };
  delete childEnv.AUDIT_ADMIN_DATABASE_URL;
  const child = spawn(process.execPath, cli.args(args), {
    cwd,
    env: { ...childEnv, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  return new Promise((done) => child.once('close', (status) => done({ status, stdout, stderr })));
}

const daysAgo = (days: number) => new Date(Date.now() - days * 86_400_000).toISOString();

/**
 * A new organization of the tenant with audit rows of these ages (days), then a policy of `retentionDays` saved through
 * the API: its organization.update row is the newest, after the aged rows.
 */
async function organizationWithRows(retentionDays: number, ages: number[]) {
  const created = await t.api.request('POST', '/api/v1/orgs/organizations', {
    token: tenant.partnerToken,
    body: { name: `Kept ${retentionDays} days` },
  });
  const orgId: string = created.body.id;
  const sealed = await appendAudit(
    t.db.admin,
    ages.map((age) => ({ orgId, timestamp: daysAgo(age) })),
  );
  const saved = await t.api.request('PUT', `/api/v1/orgs/organizations/${orgId}/audit-retention`, {
    token: tenant.partnerToken,
    body: { retentionDays },
  });
  expect(saved.status).toBe(200);
  return { orgId, sealed };
}

const seqs = async (orgId: string) => (await readChain(t.db.admin, orgId)).map((row) => row.seq);

describe('npm run retention', { timeout: 60_000 }, () => {
  it('rehearses with --dry-run: says per organization what would be deleted, deletes and records nothing, exits 0', async () => {
    const expired = await organizationWithRows(30, [400, 300, 1]);
    const recent = await organizationWithRows(30, [1]);
    const run = await retention(['--dry-run']);
    expect(run.stdout).toMatch(
      new RegExp(
        `^would prune organization ${expired.orgId} \\(Kept 30 days\\): 2 rows, seq 1\\.\\.2 \\(older than \\S+, 30 days\\)$`,
        'm',
      ),
    );
    expect(run.stdout).toMatch(
      new RegExp(
        `^organization ${recent.orgId} \\(Kept 30 days\\): nothing to delete \\(older than \\S+, 30 days\\)$`,
        'm',
      ),
    );
    expect(run.stdout).toMatch(
      /^dry run: [\d,]+ rows? would be deleted from \d+ of \d+ organizations with a policy; \d+ organizations? without one skipped; as of \S+\. Nothing was deleted\.$/m,
    );
    expect(run.status).toBe(0);
    expect(await seqs(expired.orgId)).toEqual([1, 2, 3, 4]);
    const { rows } = await t.db.admin.query(
      'SELECT last_cleanup_at FROM audit_retention_policies WHERE org_id = :orgId::uuid',
      { orgId: expired.orgId },
    );
    expect(rows).toEqual([{ last_cleanup_at: null }]);
  });

  it('deletes the expired prefix of each organization with a policy, says what it cut, and the chain verifies', async () => {
    const { orgId } = await organizationWithRows(30, [400, 300, 1]);
    const run = await retention([]);
    expect(run.stdout).toContain(`pruned organization ${orgId} (Kept 30 days): 2 rows, seq 1..2 (older than`);
    expect(run.stdout).toMatch(
      /^done: [\d,]+ rows? deleted from \d+ of \d+ organizations with a policy; \d+ organizations? without one skipped; as of \S+\.$/m,
    );
    expect(run.status).toBe(0);
    // 5: the retention event; 6: the integrity watch's record of the organization's first anchor.
    expect(await seqs(orgId)).toEqual([3, 4, 5, 6]);
    expect(await verifyChain(t.db.admin, orgId)).toEqual({ ok: true, checked: 4 });
    const again = await retention([]);
    expect(again.stdout).not.toContain(orgId);
    expect(await seqs(orgId)).toEqual([3, 4, 5, 6]);
  });

  it('evaluates the windows as of --as-of, and the system event records it', async () => {
    const { orgId } = await organizationWithRows(30, [10, 5]);
    expect((await retention([])).stdout).not.toContain(orgId);
    const asOf = new Date(Date.now() + 28 * 86_400_000).toISOString();
    const run = await retention(['--as-of', asOf]);
    expect(run.status).toBe(0);
    // As of then, both rows are older than 30 days; the PUT's row of today is not.
    expect(run.stdout).toContain(`pruned organization ${orgId} (Kept 30 days): 2 rows, seq 1..2 (older than`);
    // 4: the first run's record of the first anchor; 5: the retention event.
    const chain = await readChain(t.db.admin, orgId);
    expect(chain.map((row) => row.seq)).toEqual([3, 4, 5]);
    expect(chain[2]).toMatchObject({ action: retentionAction, actorType: 'system' });
    expect(JSON.parse(chain[2]!.details)).toMatchObject({
      rowsDeleted: 2,
      fromSeq: 1,
      throughSeq: 2,
      asOf,
      dryRun: false,
    });
  });

  it('shows organizations done and rows deleted on stderr with --progress', async () => {
    await organizationWithRows(30, [400, 300]);
    const run = await retention(['--progress']);
    const lines = run.stderr.trim().split('\n');
    expect(lines.at(-1)).toMatch(/^retention: (\d+) \/ \1 organizations done, 2 rows deleted$/);
    expect(run.status).toBe(0);
  });

  it('connects with AUDIT_ADMIN_DATABASE_URL when it is set, and exits 2 when that login may not prune', async () => {
    const { orgId } = await organizationWithRows(30, [400]);
    const unreachable = `postgres://postgres:secret@127.0.0.1:${await freePort()}/postgres`;
    // The API's login is no audit admin: the database refuses its deletions, and the run says so.
    const refused = await retention([], { DATABASE_URL: unreachable, AUDIT_ADMIN_DATABASE_URL: t.db.urls.app });
    expect(refused.stderr).toMatch(
      new RegExp(`^failed: organization ${orgId} \\(Kept 30 days\\): permission denied`, 'm'),
    );
    expect(refused.status).toBe(2);
    expect(await seqs(orgId)).toEqual([1, 2]);
    const run = await retention([], { DATABASE_URL: unreachable, AUDIT_ADMIN_DATABASE_URL: t.db.urls.auditAdmin });
    expect(run.stdout).toContain(`pruned organization ${orgId} (Kept 30 days): 1 row, seq 1..1`);
    expect(run.status).toBe(0);
  });

  it('exits 2 and says which database it could not reach, without the password', async () => {
    const port = await freePort();
    const run = await retention([], { DATABASE_URL: `postgres://postgres:secret@127.0.0.1:${port}/postgres` });
    expect(run.stderr).toContain(
      `cannot run retention in the database at 127.0.0.1:${port}/postgres as logbook_audit_admin`,
    );
    expect(run.stderr).not.toContain('secret');
    expect(run.status).toBe(2);
  });

  it("finds a running `npm start`'s database by the port it wrote to .data/, without EMBEDDED_PG_PORT", async () => {
    const checkout = mkdtempSync(join(tmpdir(), 'logbook-checkout-'));
    try {
      const port = new URL(t.db.urls.admin).port;
      mkdirSync(join(checkout, '.data'));
      writeFileSync(join(checkout, '.data/postgres.port'), `${port}\n`);
      const run = await retention(['--dry-run'], { DATABASE_URL: '', EMBEDDED_PG_PORT: '' }, checkout);
      // The cluster's own `postgres` database holds no Logbook tables: the server answered, on the port written.
      expect(run.stderr).toContain(`in the database at 127.0.0.1:${port}/postgres`);
      expect(run.stderr).toContain('relation "audit_retention_policies" does not exist');
      expect(run.stderr).not.toContain('ECONNREFUSED');
    } finally {
      rmSync(checkout, { recursive: true, force: true });
    }
  });

  it('exits 2 on a usage error', async () => {
    for (const args of [['--as-of', 'yesterday'], ['--org', 'x'], ['extra']]) {
      const run = await retention(args);
      expect(run.stderr, args.join(' ')).toContain('usage error');
      expect(run.status).toBe(2);
    }
  });
});
