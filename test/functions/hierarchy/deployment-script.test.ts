import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Language, type Node, Parser } from 'web-tree-sitter';
import { useApi } from '#test/support/api.ts';
import { useCli } from '#test/support/cli.ts';
import { createTenant, platformAdmin, type Tenant } from '#test/support/tenants.ts';

/**
 * The syntax errors the tree-sitter PowerShell grammar finds in a script (its WebAssembly build: no native code).
 * pwsh cannot be installed here; a third-party grammar, not PowerShell's own parser, but a parse all the same.
 */
async function powershellSyntaxErrors(script: string) {
  await Parser.init();
  const wasm = createRequire(import.meta.url).resolve('tree-sitter-powershell/tree-sitter-powershell.wasm');
  const parser = new Parser();
  parser.setLanguage(await Language.load(wasm));
  const tree = parser.parse(script)!;
  const errors: string[] = [];
  const walk = (node: Node) => {
    if (node.isError || node.isMissing)
      errors.push(
        `${node.type} at ${node.startPosition.row + 1}:${node.startPosition.column + 1}: ${node.text.slice(0, 60)}`,
      );
    for (const child of node.children) if (child) walk(child);
  };
  walk(tree.rootNode);
  return errors;
}

const t = useApi();
let tenant: Tenant;
let other: Tenant;
beforeAll(async () => {
  tenant = await createTenant(t.api, 'Deploy');
  other = await createTenant(t.api, 'Other');
});
afterEach(() => {
  delete process.env.PUBLIC_API_URL;
  delete process.env.AGENT_ENROLLMENT_SECRET;
});

const keysPath = (orgId: string) => `/api/v1/orgs/organizations/${orgId}/enrollment-keys`;
const createKey = async (body: Record<string, unknown> = {}) => {
  const reply = await t.api.request('POST', keysPath(tenant.orgId), { token: tenant.orgToken, body });
  expect(reply.status).toBe(201);
  return reply.body as { id: string; key: string; maxUsage: number; usageCount: number };
};
const enroll = (key: string, hostname: string) =>
  t.api.request('POST', '/api/v1/agents/enroll', { body: { enrollmentKey: key, hostname } });

/** The script's text as downloaded. */
async function script(keyId: string, platform: string, token = tenant.orgToken, orgId = tenant.orgId) {
  const response = await fetch(`${t.api.url}${keysPath(orgId)}/${keyId}/deployment-script?platform=${platform}`, {
    headers: { authorization: `Bearer ${token}` },
  });
  return { status: response.status, type: response.headers.get('content-type'), text: await response.text() };
}

/** The simulated agent (demo/agent/main.ts), as a plain node command. */
const agent = useCli('demo/agent/main.ts');

/** Runs the POSIX script with sh, the simulated agent as AGENT_COMMAND, in a state directory. */
function run(text: string, stateDir: string): Promise<{ code: number | null; output: string }> {
  const file = join(mkdtempSync(join(tmpdir(), 'logbook-script-')), 'deploy.sh');
  writeFileSync(file, text);
  return new Promise((done) => {
    const child = spawn('sh', [file], {
      env: { ...process.env, AGENT_STATE_DIR: stateDir, AGENT_COMMAND: `${process.execPath} ${agent.path}` },
    });
    let output = '';
    child.stdout.on('data', (chunk) => {
      output += chunk;
    });
    child.stderr.on('data', (chunk) => {
      output += chunk;
    });
    child.on('close', (code) => done({ code, output }));
  });
}

const devicesNamed = async (orgId: string) =>
  (
    await t.db.admin.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM devices WHERE org_id = :orgId::uuid AND deleted_at IS NULL',
      { orgId },
    )
  ).rows[0]!.n;

describe('enrollment key usage caps', () => {
  it('enrolls one device with a key by default and refuses the second with a clear 401', async () => {
    const key = await createKey();
    expect(key).toMatchObject({ maxUsage: 1, usageCount: 0 });
    expect((await enroll(key.key, 'single-1')).status).toBe(201);
    const second = await enroll(key.key, 'single-2');
    expect(second.status).toBe(401);
    expect(second.body.error.message).toMatch(/usage limit/);
  });

  it('never passes the cap under concurrent enrollments, and lists show usageCount', async () => {
    const key = await createKey({ maxUsage: 3, name: 'fleet' });
    const replies = await Promise.all(Array.from({ length: 12 }, (_, i) => enroll(key.key, `fleet-${i}`)));
    expect(replies.filter((r) => r.status === 201)).toHaveLength(3);
    expect(replies.filter((r) => r.status === 401)).toHaveLength(9);
    const list = await t.api.request('GET', keysPath(tenant.orgId), { token: tenant.orgToken });
    expect(list.body.data.find((k: { id: string }) => k.id === key.id)).toMatchObject({ maxUsage: 3, usageCount: 3 });
  });

  it.each([0, 100_001, 1.5])('refuses maxUsage %j with a 400 naming it', async (maxUsage) => {
    const reply = await t.api.request('POST', keysPath(tenant.orgId), { token: tenant.orgToken, body: { maxUsage } });
    expect(reply.status).toBe(400);
    expect(JSON.stringify(reply.body)).toContain('maxUsage');
  });
});

describe('GET …/enrollment-keys/{keyId}/deployment-script', () => {
  it('enrolls the machine on the first run and does nothing on the second (POSIX sh, simulated agent)', async () => {
    const key = await createKey({ maxUsage: 10 });
    const downloaded = await script(key.id, 'linux');
    expect(downloaded.status).toBe(200);
    expect(downloaded.type).toContain('text/x-shellscript');
    const state = mkdtempSync(join(tmpdir(), 'logbook-state-'));
    const before = await devicesNamed(tenant.orgId);
    const first = await run(downloaded.text, state);
    expect(first.code, first.output).toBe(0);
    expect(first.output).toContain('logbook-deploy: enrolled');
    expect(existsSync(join(state, 'agent.yaml'))).toBe(true);
    expect(await devicesNamed(tenant.orgId)).toBe(before + 1);
    const second = await run(downloaded.text, state);
    expect(second.code).toBe(0);
    expect(second.output).toContain('already enrolled');
    expect(await devicesNamed(tenant.orgId)).toBe(before + 1);
    for (const output of [first.output, second.output]) {
      expect(output).not.toContain(key.key);
      expect(output).not.toMatch(/lba_|token/i);
    }
  });

  it('enrolls once when two runs start at the same time on one machine (the lock)', async () => {
    const key = await createKey({ maxUsage: 10 });
    const { text } = await script(key.id, 'macos');
    const state = mkdtempSync(join(tmpdir(), 'logbook-state-'));
    const runs = await Promise.all([run(text, state), run(text, state)]);
    expect(runs.map((r) => r.code)).toEqual([0, 0]);
    expect(runs.filter((r) => r.output.includes('logbook-deploy: enrolled'))).toHaveLength(1);
    const list = await t.api.request('GET', keysPath(tenant.orgId), { token: tenant.orgToken });
    expect(list.body.data.find((k: { id: string }) => k.id === key.id).usageCount).toBe(1);
  });

  it('exits 2 when the key is revoked and 3 when the server cannot be reached', async () => {
    const key = await createKey();
    const { text } = await script(key.id, 'linux');
    expect(
      (await t.api.request('DELETE', `${keysPath(tenant.orgId)}/${key.id}`, { token: tenant.orgToken })).status,
    ).toBe(204);
    const refused = await run(text, mkdtempSync(join(tmpdir(), 'logbook-state-')));
    expect(refused.code).toBe(2);
    expect(refused.output).toContain('refused');
    expect(refused.output).not.toContain(key.key);

    process.env.PUBLIC_API_URL = 'http://127.0.0.1:9';
    const unreachable = await script((await createKey()).id, 'linux');
    const result = await run(unreachable.text, mkdtempSync(join(tmpdir(), 'logbook-state-')));
    expect(result.code).toBe(3);
    expect(result.output).toContain('cannot be reached');
  });

  it('carries the enrollment secret only for a platform caller, a placeholder for others', async () => {
    process.env.AGENT_ENROLLMENT_SECRET = 'sekrit-value-42';
    const key = await createKey();
    expect((await script(key.id, 'linux')).text).not.toContain('sekrit-value-42');
    expect((await script(key.id, 'linux')).text).toContain('__ENROLLMENT_SECRET__');
    expect((await script(key.id, 'linux', await platformAdmin())).text).toContain("'sekrit-value-42'");
  });

  it('gives Windows a PowerShell script of the same structure', async () => {
    const key = await createKey();
    const { status, text } = await script(key.id, 'windows');
    expect(status).toBe(200);
    // pwsh is not installed here: the structure is checked, the brackets and quotes balance, and a PowerShell
    // grammar parses it.
    for (const part of [
      'if (Test-Path -LiteralPath $StateFile)',
      'exit 0',
      'exit 2',
      'exit 3',
      'exit 1',
      "System.Threading.Mutex($false, 'Global\\LogbookAgentDeploy')",
      '$env:AGENT_STATE_DIR',
      '$env:AGENT_COMMAND',
      '& $AgentCommand enroll --url $ServerUrl --state $StateFile',
      key.key,
    ])
      expect(text).toContain(part);
    const code = text
      .replace(/^#.*$/gm, '')
      .replace(/'[^']*'/g, "''")
      .replace(/"[^"]*"/g, '""');
    for (const [open, close] of [
      ['{', '}'],
      ['(', ')'],
      ['[', ']'],
    ] as const)
      expect(code.split(open).length, open).toBe(code.split(close).length);
    expect(text).not.toMatch(/Write-Output[^\n]*\$EnrollmentKey/);
    // Parsed: no syntax error; and the same parse finds one in a script with a parenthesis missing.
    expect(await powershellSyntaxErrors(text)).toEqual([]);
    expect(
      await powershellSyntaxErrors(
        text.replace('if (Test-Path -LiteralPath $StateFile)', 'if (Test-Path -LiteralPath $StateFile'),
      ),
    ).not.toEqual([]);
  });

  it("is 404 for another tenant's organization or key, 400 for an unknown platform", async () => {
    const key = await createKey();
    expect((await script(key.id, 'linux', other.orgToken)).status).toBe(404);
    expect((await script(key.id, 'linux', other.orgToken, other.orgId)).status).toBe(404);
    expect((await script(key.id, 'solaris')).status).toBe(400);
  });
});
