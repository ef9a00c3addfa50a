import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '#infra/local/free-port.ts';
import {
  type AnchorFields,
  anchorKeyId,
  generateAnchorKey,
  orgsDigest,
  publicKeyPem,
  signAnchor,
} from '#shared/audit/anchor-signing.ts';
import type { AuditRow } from '#shared/audit/row.ts';
import {
  appendAudit,
  deleteChainRows,
  forgedRow,
  insertForged,
  readChain,
  tamper,
  updateChainRows,
} from '#test/shared/audit/audit-rows.ts';
import { useApi } from '#test/support/api.ts';
import { useCli } from '#test/support/cli.ts';
import { createTenant } from '#test/support/tenants.ts';

const t = useApi();
const cli = useCli('tools/audit-verify.ts');
/** The key the verifier checks signatures with (AUDIT_ANCHOR_PUBLIC_KEY), as an operator configures it. */
const evidenceKey = generateAnchorKey();
let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'logbook-audit-verify-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `npm run audit:verify`'s entry point against this file's database (as its administrator, as an operator would locally). */
function auditVerify(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Run> {
  const child = spawn(process.execPath, cli.args(args), {
    env: { ...process.env, DATABASE_URL: t.db.urls.admin, AUDIT_ANCHOR_PUBLIC_KEY: publicKeyPem(evidenceKey), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  return new Promise((done) => child.once('close', (status) => done({ status, stdout, stderr })));
}

async function chainOf(length: number, timestamp?: (i: number) => string) {
  const orgId = randomUUID();
  const sealed = await appendAudit(
    t.db.admin,
    Array.from({ length }, (_, i) => ({ orgId, timestamp: timestamp?.(i + 1) })),
  );
  return { orgId, sealed };
}

const removeRow = (orgId: string, seq: number) =>
  tamper(t.db.admin, (tx) => deleteChainRows(tx, 'org_id = :orgId::uuid AND seq = :seq::bigint', { orgId, seq }));

/**
 * A file shaped like GET /audit-logs/export?format=json: rows newest first, each with its canonical values and checksums,
 * and the heads it recorded (none: an export made before heads were recorded).
 */
function exportFile(
  rows: AuditRow[],
  filters: Record<string, unknown> = {},
  heads?: Record<string, { seq: number; checksum: string }>,
): string {
  const path = join(dir, `${randomUUID()}.json`);
  const newestFirst = [...rows].sort((a, b) => b.seq - a.seq);
  writeFileSync(
    path,
    JSON.stringify({ exportedAt: new Date().toISOString(), filters, ...(heads && { heads }), rows: newestFirst }),
  );
  return path;
}

/** The organization's head as the database holds it. */
const liveHead = (orgId: string) =>
  t.db.admin
    .query<{ seq: number; checksum: string }>(
      'SELECT seq, checksum FROM audit_chain_heads WHERE org_id = :orgId::uuid',
      { orgId },
    )
    .then((r) => r.rows[0]!);

describe('npm run audit:verify -- --org', () => {
  it('finds an untouched chain intact, says how many rows it checked, prints the head, and exits 0', async () => {
    const { orgId, sealed } = await chainOf(5);
    const run = await auditVerify(['--org', orgId]);
    expect(run.stdout).toBe(
      `ok: organization ${orgId}: chain intact, 5 rows checked\n` +
        `head: organization ${orgId}: seq 5, checksum ${sealed[4]!.checksum} (compare it with a head kept outside the database, e.g. an export's)\n` +
        'evidence: signatures of checkpoints and anchors checked with AUDIT_ANCHOR_PUBLIC_KEY / AUDIT_ANCHOR_PRIVATE_KEY\n',
    );
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
  });

  it('says an organization without rows has no head', async () => {
    const orgId = randomUUID();
    const run = await auditVerify(['--org', orgId]);
    expect(run.stdout).toContain(`head: organization ${orgId}: none\n`);
    expect(run.status).toBe(0);
  });

  it('reports an altered row with its seq, id and kind, and exits 1', async () => {
    const { orgId, sealed } = await chainOf(5);
    await tamper(t.db.admin, (tx) =>
      updateChainRows(tx, `action = 'device.delete'`, `org_id = :orgId::uuid AND seq = 3`, { orgId }),
    );
    const run = await auditVerify(['--org', orgId]);
    expect(run.stdout).toContain(`break: organization ${orgId}: seq 3, id ${sealed[2]!.id}, kind altered`);
    expect(run.status).toBe(1);
  });

  it('reports a deleted row missing at its position, and exits 1', async () => {
    const { orgId } = await chainOf(5);
    await removeRow(orgId, 3);
    const run = await auditVerify(['--org', orgId]);
    expect(run.stdout).toContain(`break: organization ${orgId}: seq 3, id none, kind missing`);
    expect(run.status).toBe(1);
  });

  it('verifies only the rows timestamped within --from and --to, and the links around them', async () => {
    const { orgId } = await chainOf(10, (n) => `2024-05-${String(n).padStart(2, '0')}T12:00:00Z`);
    await removeRow(orgId, 9);
    const run = await auditVerify(['--org', orgId, '--from', '2024-05-04T00:00:00Z', '--to', '2024-05-06T23:59:59Z']);
    expect(run.stdout).toContain(
      'chain intact, 5 rows checked (the rows timestamped from 2024-05-04T00:00:00Z to 2024-05-06T23:59:59Z',
    );
    expect(run.status).toBe(0);
  });

  it('shows rows checked out of the total on stderr while a range longer than one page is verified', async () => {
    const { orgId } = await chainOf(6_000);
    const run = await auditVerify(['--org', orgId, '--progress']);
    const lines = run.stderr.trim().split('\n');
    expect(lines[0]).toMatch(new RegExp(`^verifying organization ${orgId}: \\d[\\d,]* / 6,000 rows \\(\\d+%\\)$`));
    expect(lines[0]).not.toContain('(100%)');
    expect(lines.at(-1)).toBe(`verifying organization ${orgId}: 6,000 / 6,000 rows (100%)`);
    expect(run.stdout).toContain('chain intact, 6,000 rows checked');
    expect(run.status).toBe(0);
  });

  it('exits 2 and says which database it could not reach', async () => {
    const port = await freePort();
    const run = await auditVerify(['--org', randomUUID()], {
      DATABASE_URL: `postgres://postgres:secret@127.0.0.1:${port}/postgres`,
    });
    expect(run.stderr).toContain(`cannot verify in the database at 127.0.0.1:${port}/postgres`);
    expect(run.stderr).not.toContain('secret');
    expect(run.status).toBe(2);
  });
});

describe('npm run audit:verify -- --file', () => {
  it('verifies the JSON file the export endpoint produces, offline', async () => {
    const tenant = await createTenant(t.api, 'Exporter');
    await appendAudit(
      t.db.admin,
      Array.from({ length: 4 }, (_, i) => ({ orgId: tenant.orgId, details: { step: i, note: 'naïve ✓ "quoted"' } })),
    );
    const reply = await t.api.request('GET', `/api/v1/audit-logs/export?format=json&orgId=${tenant.orgId}`, {
      token: tenant.orgToken,
    });
    expect(reply.status).toBe(200);
    const path = join(dir, 'endpoint-export.json');
    writeFileSync(path, JSON.stringify(reply.body));
    // A database-free run: the file is all it reads.
    const run = await auditVerify(['--file', path], { DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' });
    expect(run.stdout).toMatch(/^ok: .*: \d+ rows of 1 organization checked offline/m);
    // The export's snapshot held 4 rows; its data.export row came after.
    const head = reply.body.heads[tenant.orgId];
    expect(head).toEqual({ seq: 4, checksum: reply.body.rows[0].checksum });
    expect(run.stdout).toContain(
      `    last verified: seq 4, checksum ${head.checksum}\n    head recorded in the export: seq 4, checksum ${head.checksum}\n`,
    );
    expect(run.stdout).toContain(
      'compare each recorded head with the live head (npm run audit:verify -- --org <orgId> prints it)',
    );
    expect(run.status).toBe(0);
  });

  it("prints each organization's last verified checksum and the export's recorded head, to compare with the live one", async () => {
    const { orgId, sealed } = await chainOf(3);
    const run = await auditVerify([
      '--file',
      exportFile(await readChain(t.db.admin, orgId), {}, { [orgId]: await liveHead(orgId) }),
    ]);
    expect(run.stdout).toContain(
      `  organization ${orgId}: seq 1..3: intact, from the chain's first row\n` +
        `    last verified: seq 3, checksum ${sealed[2]!.checksum}\n` +
        `    head recorded in the export: seq 3, checksum ${sealed[2]!.checksum}\n`,
    );
    expect(run.status).toBe(0);
  });

  it('reports newest rows taken out of a file that recorded its head as missing, and a last row the head does not match as link', async () => {
    const { orgId, sealed } = await chainOf(5);
    const chain = await readChain(t.db.admin, orgId);
    const heads = { [orgId]: await liveHead(orgId) };
    const cut = await auditVerify(['--file', exportFile(chain.slice(0, 3), {}, heads)]);
    expect(cut.stdout).toContain(`organization ${orgId}: seq 1..3: break at seq 4, id none, kind missing`);
    expect(cut.status).toBe(1);
    const otherHead = { [orgId]: { seq: 5, checksum: 'f'.repeat(64) } };
    const mismatch = await auditVerify(['--file', exportFile(chain, {}, otherHead)]);
    expect(mismatch.stdout).toContain(
      `organization ${orgId}: seq 1..5: break at seq 5, id ${sealed[4]!.id}, kind link`,
    );
    expect(mismatch.status).toBe(1);
    const past = await auditVerify([
      '--file',
      exportFile(chain, {}, { [orgId]: { seq: 4, checksum: sealed[3]!.checksum } }),
    ]);
    expect(past.stdout).toContain(`break at seq 5, id ${sealed[4]!.id}, kind inserted`);
    expect(past.status).toBe(1);
  });

  it('still reads an export without recorded heads, and says so', async () => {
    const { orgId } = await chainOf(2);
    const run = await auditVerify(['--file', exportFile(await readChain(t.db.admin, orgId))]);
    expect(run.stdout).toContain('    head recorded in the export: none (an export without heads)\n');
    expect(run.status).toBe(0);
  });

  it('checks a range from the chain start and says so', async () => {
    const { orgId } = await chainOf(5);
    const run = await auditVerify(['--file', exportFile(await readChain(t.db.admin, orgId))]);
    expect(run.stdout).toContain(`organization ${orgId}: seq 1..5: intact, from the chain's first row`);
    expect(run.stdout).toMatch(/^ok: .*: 5 rows of 1 organization checked offline/m);
    expect(run.status).toBe(0);
  });

  it("checks a later range and says the first row's link needs the database", async () => {
    const { orgId, sealed } = await chainOf(8);
    const rows = (await readChain(t.db.admin, orgId)).filter((row) => row.seq >= 4);
    const run = await auditVerify(['--file', exportFile(rows, { orgId })]);
    expect(run.stdout).toContain(
      `seq 4..8: intact; the link of seq 4 to seq 3 (prevChecksum ${sealed[2]!.checksum}) cannot be checked without the database`,
    );
    expect(run.status).toBe(0);
  });

  it('reports a row altered in the file with its seq, id and kind, and exits 1', async () => {
    const { orgId, sealed } = await chainOf(5);
    const rows = (await readChain(t.db.admin, orgId)).map((row) =>
      row.seq === 3 ? { ...row, resourceName: 'WS-9999' } : row,
    );
    const run = await auditVerify(['--file', exportFile(rows)]);
    expect(run.stdout).toContain(`break at seq 3, id ${sealed[2]!.id}, kind altered`);
    expect(run.stdout).toMatch(/^break: /m);
    expect(run.status).toBe(1);
  });

  it('reports a row taken out of an unfiltered export as missing, and exits 1', async () => {
    const { orgId } = await chainOf(5);
    const rows = (await readChain(t.db.admin, orgId)).filter((row) => row.seq !== 3);
    const run = await auditVerify(['--file', exportFile(rows)]);
    expect(run.stdout).toContain('break at seq 3, id none, kind missing');
    expect(run.status).toBe(1);
  });

  it("checks each organization of a partner's export on its own", async () => {
    const intact = await chainOf(3);
    const altered = await chainOf(3);
    const rows = [...(await readChain(t.db.admin, intact.orgId)), ...(await readChain(t.db.admin, altered.orgId))].map(
      (row) => (row.orgId === altered.orgId && row.seq === 2 ? { ...row, details: '{"approved": true}' } : row),
    );
    const run = await auditVerify(['--file', exportFile(rows)]);
    expect(run.stdout).toContain(`organization ${intact.orgId}: seq 1..3: intact`);
    expect(run.stdout).toContain(
      `organization ${altered.orgId}: seq 1..3: break at seq 2, id ${altered.sealed[1]!.id}, kind altered`,
    );
    // The altered chain is checked up to its break: 3 + 2 checksums recomputed.
    expect(run.stdout).toMatch(/^break: .*: 5 rows of 2 organizations checked offline/m);
    expect(run.status).toBe(1);
  });

  it('reports a second row at one position as inserted', async () => {
    const { orgId, sealed } = await chainOf(3);
    const rows = await readChain(t.db.admin, orgId);
    const forged = { ...rows[1]!, id: randomUUID() };
    const run = await auditVerify(['--file', exportFile([...rows, forged])]);
    expect(run.stdout).toMatch(new RegExp(`break at seq 2, id (${forged.id}|${sealed[1]!.id}), kind inserted`));
    expect(run.status).toBe(1);
  });

  it('refuses a filtered export with gaps in seq as not a contiguous range, and exits 2', async () => {
    const { orgId } = await chainOf(5);
    const rows = (await readChain(t.db.admin, orgId)).filter((row) => row.seq !== 3);
    const run = await auditVerify(['--file', exportFile(rows, { action: 'device' })]);
    expect(run.stderr).toContain('not a contiguous range: cannot verify offline');
    expect(run.stderr).toContain('filtered by action');
    expect(run.stdout).toBe('');
    expect(run.status).toBe(2);
  });

  it('exits 2 on a file that is not a JSON export', async () => {
    const path = join(dir, 'export.csv');
    writeFileSync(path, 'id,orgId,seq\n');
    const run = await auditVerify(['--file', path]);
    expect(run.stderr).toContain('is not JSON');
    expect(run.status).toBe(2);
  });
});

describe('npm run audit:verify -- --anchor', () => {
  const key = generateAnchorKey();
  /** A reply of GET /audit-logs/anchors holding a signed anchor of the organization's head, saved to a file. */
  async function keptAnchor(orgId: string, publicKey: string | null = publicKeyPem(key)) {
    const head = await liveHead(orgId);
    const fields: AnchorFields = {
      orgId,
      seq: head.seq,
      checksum: head.checksum,
      firstRetainedSeq: 1,
      boundaryChecksum: null,
      orgCount: 1,
      orgsDigest: orgsDigest([orgId]),
      anchoredAt: '2026-03-01T00:00:00.000Z',
      keyId: anchorKeyId(key),
    };
    const path = join(dir, `${randomUUID()}.json`);
    writeFileSync(
      path,
      JSON.stringify({
        publicKey,
        keyId: fields.keyId,
        data: [{ id: randomUUID(), ...fields, signature: signAnchor(fields, key) }],
        pagination: {},
      }),
    );
    return { path, head };
  }

  it('proves the chain still holds a kept anchor, with its signature checked by the key in the reply', async () => {
    const { orgId } = await chainOf(3);
    const { path, head } = await keptAnchor(orgId);
    const run = await auditVerify(['--org', orgId, '--anchor', path]);
    expect(run.status).toBe(0);
    expect(run.stdout).toContain(
      `anchor: organization ${orgId}: the chain still holds the anchor of 2026-03-01T00:00:00.000Z (seq 3, checksum ${head.checksum}); signature checked with the publicKey of ${path}`,
    );
  });

  it('finds a chain rewritten wholesale, which verifies on its own, and exits 1', async () => {
    const { orgId } = await chainOf(2);
    const { path } = await keptAnchor(orgId);
    await tamper(t.db.admin, (tx) => deleteChainRows(tx, 'org_id = :orgId::uuid', { orgId }));
    let prev: string | null = null;
    for (const seq of [1, 2]) {
      const row = forgedRow(orgId, seq, prev);
      await insertForged(t.db.admin, row);
      prev = row.checksum;
    }
    await tamper(t.db.admin, (tx) =>
      tx.query('UPDATE audit_chain_heads SET checksum = :checksum::text WHERE org_id = :orgId::uuid', {
        orgId,
        checksum: prev,
      }),
    );
    expect((await auditVerify(['--org', orgId])).status).toBe(0);

    const run = await auditVerify(['--org', orgId, '--anchor', path]);
    expect(run.status).toBe(1);
    expect(run.stdout).toContain(
      `break: organization ${orgId}: the chain no longer holds the anchor of 2026-03-01T00:00:00.000Z (seq 2`,
    );
  });

  it('refuses an anchor signed by another key than --public-key', async () => {
    const { orgId } = await chainOf(1);
    const { path } = await keptAnchor(orgId);
    const other = join(dir, `${randomUUID()}.pem`);
    writeFileSync(other, publicKeyPem(generateAnchorKey()));
    const run = await auditVerify(['--org', orgId, '--anchor', path, '--public-key', other]);
    expect(run.status).toBe(1);
    expect(run.stdout).toContain('or its signature is not valid');
  });

  it('says when the signature could not be checked, and exits 2 on a file without an anchor of the organization', async () => {
    const { orgId } = await chainOf(1);
    const unsigned = await keptAnchor(orgId, null);
    const run = await auditVerify(['--org', orgId, '--anchor', unsigned.path]);
    expect(run.status).toBe(0);
    expect(run.stdout).toContain('signature NOT checked: no public key (give --public-key)');
    const elsewhere = await auditVerify(['--org', randomUUID(), '--anchor', unsigned.path]);
    expect(elsewhere).toMatchObject({ status: 2, stderr: expect.stringContaining('holds no anchor of organization') });
  });
});

describe('npm run audit:verify usage', () => {
  it.each([
    ['no arguments', [], 'give --org <orgId> or --file <export.json>'],
    ['an organization id that is not a UUID', ['--org', 'acme'], '--org: Invalid UUID'],
    ['an invalid --from', ['--org', randomUUID(), '--from', 'yesterday'], '--from:'],
    ['an unknown option', ['--org', randomUUID(), '--orgs'], "Unknown option '--orgs'"],
    ['--file with --org', ['--file', 'x.json', '--org', randomUUID()], '--file takes no --org'],
  ])('exits 2 and prints the usage on %s', async (_case, args, message) => {
    const run = await auditVerify(args);
    expect(run.stderr).toContain(`usage error: ${message}`);
    expect(run.stderr).toContain('Usage:');
    expect(run.status).toBe(2);
  });
});
