/**
 * The Lambda bundles as infra/aws/bundle.ts builds them for the stack: a route group's bundle, imported and called
 * like Lambda calls it, answers through the Data API (the local endpoint in front of the test database), with
 * node-postgres and zod's translations left out.
 */
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import { join } from 'node:path';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { routes, wsRoutes } from '#functions/routes.ts';
import { bundleLambda, bundleOptions } from '#infra/aws/bundle.ts';
import { projectRoot, writeDispatchEntry } from '#infra/aws/functions.ts';
import { routeGroups, routeTablePrelude } from '#infra/aws/logbook-stack.ts';
import { powertoolsPackages } from '#infra/aws/powertools.ts';
import type { Handler } from '#shared/http/handler.ts';
import { type LocalDataApi, startLocalDataApi } from '#test/support/data-api.ts';
import { createTestDatabase, type TestDatabase } from '#test/support/database.ts';
import { httpEvent, lambdaContext } from '#test/support/events.ts';

let test: TestDatabase;
let local: LocalDataApi;
const outdir = join(projectRoot, 'node_modules', '.cache', `logbook-bundle-test-${process.pid}`);
const lambdaEnvironment: Record<string, string> = {};

beforeAll(async () => {
  test = await createTestDatabase();
  local = await startLocalDataApi(test);
  Object.assign(lambdaEnvironment, local.env);
  Object.assign(process.env, local.env);
});

afterAll(async () => {
  for (const name of Object.keys(lambdaEnvironment)) delete process.env[name];
  rmSync(outdir, { recursive: true, force: true });
  await local?.close();
  await test?.close();
});

/** The route group's bundle, imported as the Lambda runtime imports it. */
async function bundled(group: string): Promise<{ handler: Handler; files: string[] }> {
  const dir = join(outdir, group);
  await bundleLambda({
    entry: writeDispatchEntry(`bundle-test-${group}`, routeGroups().get(group)!.targets, { routeKey: 'http' }),
    outdir: dir,
  });
  const { handler } = (await import(join(dir, 'index.mjs'))) as { handler: Handler };
  return { handler, files: readdirSync(dir, { recursive: true, encoding: 'utf8' }) };
}

const call = (handler: Handler, routeKey: keyof typeof routes, body?: unknown) => {
  const [method, path] = routeKey.split(' ') as [string, string];
  return handler(httpEvent({ method, path, routeKey, body }), {
    ...lambdaContext,
    functionName: 'logbook-system',
  }) as Promise<{ statusCode: number; body: string }>;
};

describe('a Lambda bundle', { timeout: 60_000 }, () => {
  it('answers its routes through the Data API', async () => {
    const { handler, files } = await bundled('system');
    const before = local.server.calls.length;
    expect(await call(handler, 'GET /api/v1/health/ready')).toMatchObject({
      statusCode: 200,
      body: '{"status":"ok"}',
    });
    expect(local.server.calls.length).toBeGreaterThan(before);
    expect(files).toContain('index.mjs');
    expect(files.some((f) => f.endsWith('.mjs.map'))).toBe(true);
  });

  it('leaves node-postgres out, the AWS SDK to the Lambda runtime and Powertools to its layer', async () => {
    const dir = join(outdir, 'system');
    const code = readdirSync(dir, { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.mjs'))
      .map((f) => readFileSync(join(dir, f), 'utf8'))
      .join('\n');
    expect(code).not.toContain('pg-protocol');
    expect(code).toMatch(/from\s*"@aws-sdk\/client-rds-data"/);
    expect(code).toMatch(/from\s*"@aws-lambda-powertools\/logger"/);
    expect(code).toMatch(/import\(\s*"@aws-lambda-powertools\/tracer"\s*\)/);
    expect(code).not.toContain('aws-xray-sdk');
    expect(existsSync(join(dir, 'node_modules'))).toBe(false);
  });

  it('imports nothing at run time but Node.js, the AWS SDK clients of the Lambda runtime and the Powertools packages of its layer', async () => {
    const entries = [
      ...[...routeGroups()].map(([group, { targets }]) =>
        writeDispatchEntry(`bundle-test-imports-${group}`, targets, { routeKey: 'http' }),
      ),
      writeDispatchEntry(
        'bundle-test-imports-ws',
        Object.fromEntries(Object.entries(wsRoutes).map(([key, route]) => [key, { handler: route.handler }])),
        { routeKey: 'websocket' },
      ),
      ...['functions/retention/run.ts', 'functions/migrate/run.ts', 'functions/migrate/anchor-key.ts'].map((entry) =>
        join(projectRoot, entry),
      ),
    ];
    const { metafile } = await build({
      ...bundleOptions,
      plugins: [...bundleOptions.plugins],
      external: [...bundleOptions.external],
      mainFields: [...bundleOptions.mainFields],
      entryPoints: entries,
      entryNames: '[name]-[hash]',
      outdir: join(outdir, 'imports'),
      write: false,
      metafile: true,
    });
    const external = new Set(
      Object.values(metafile.outputs).flatMap((output) => output.imports.filter((i) => i.external).map((i) => i.path)),
    );
    // Lambda's Node.js 22 runtime resolves these bare specifiers from /var/runtime/node_modules and the layer's /opt/nodejs/node_modules (NODE_PATH, also for ES modules).
    const provided = [
      /^@aws-sdk\/client-(rds-data|secrets-manager|apigatewaymanagementapi|sqs|sesv2|s3|cognito-identity-provider)$/,
      new RegExp(`^@aws-lambda-powertools/(${powertoolsPackages.join('|')})(/middleware)?$`),
    ];
    expect([...external].filter((path) => !isBuiltin(path) && !provided.some((pattern) => pattern.test(path)))).toEqual(
      [],
    );
    expect([...external]).toEqual(
      expect.arrayContaining([
        '@aws-lambda-powertools/logger',
        '@aws-lambda-powertools/metrics',
        '@aws-lambda-powertools/tracer',
      ]),
    );
  });

  it('in Lambda, publishes the cold start and the counts of its invocations as CloudWatch metrics', async () => {
    const dir = join(outdir, 'in-lambda');
    await bundleLambda({
      entry: writeDispatchEntry('bundle-test-in-lambda', routeGroups().get('system')!.targets, { routeKey: 'http' }),
      outdir: dir,
    });
    for (const [name, value] of Object.entries({
      AWS_LAMBDA_FUNCTION_NAME: 'logbook-system',
      AWS_LAMBDA_INITIALIZATION_TYPE: 'on-demand',
      POWERTOOLS_METRICS_NAMESPACE: 'LogbookBundleTest',
    }))
      vi.stubEnv(name, value);
    const write = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    try {
      const { handler } = (await import(join(dir, 'index.mjs'))) as { handler: Handler };
      expect(await call(handler, 'GET /api/v1/health')).toMatchObject({ statusCode: 200 });
      const emf = write.mock.calls
        .map(([chunk]) => String(chunk))
        .filter((text) => text.includes('"_aws"'))
        .map((text) => JSON.parse(text) as Record<string, any>);
      expect(emf).toEqual([
        expect.objectContaining({
          ColdStart: 1,
          function_name: 'logbook-system',
          _aws: expect.objectContaining({
            CloudWatchMetrics: [expect.objectContaining({ Namespace: 'LogbookBundleTest' })],
          }),
        }),
      ]);
    } finally {
      write.mockRestore();
      vi.unstubAllEnvs();
    }
  });

  it('of the system routes describes the whole API from the table the stack computed, with no domain code inside', async () => {
    const dir = join(outdir, 'system-table');
    await bundleLambda({
      entry: writeDispatchEntry('bundle-test-system-table', routeGroups().get('system')!.targets, {
        routeKey: 'http',
        prelude: routeTablePrelude(),
      }),
      outdir: dir,
    });
    // A message of the hierarchy's code, which its own bundle holds: none of it here.
    expect(readFileSync(join(dir, 'index.mjs'), 'utf8')).not.toContain(
      'Organization users cannot create organizations',
    );
    const { handler } = (await import(join(dir, 'index.mjs'))) as { handler: Handler };
    const document = await handler(
      httpEvent({
        path: '/api/v1/openapi.json',
        routeKey: 'GET /api/v1/openapi.json',
        headers: { host: 'api.example.com' },
      }),
      lambdaContext,
    );
    const { paths, servers } = JSON.parse((document as { body: string }).body);
    const operations = Object.values(paths as Record<string, object>).flatMap((item) => Object.keys(item));
    expect(operations.length).toBe(Object.keys(routes).length);
    expect(servers).toEqual([expect.objectContaining({ url: 'https://api.example.com' })]);
    const unmatched = (method: string, path: string) =>
      handler(httpEvent({ method, path, routeKey: '$default' }), lambdaContext) as Promise<{
        statusCode: number;
        headers?: Record<string, string>;
      }>;
    expect(await unmatched('GET', '/api/v1/nowhere')).toMatchObject({ statusCode: 404 });
    expect(await unmatched('DELETE', '/api/v1/health')).toMatchObject({ statusCode: 405, headers: { allow: 'GET' } });
  });

  it('still explains invalid input in English', async () => {
    const { handler } = await bundled('hierarchy');
    const reply = await call(handler, 'POST /api/v1/agents/enroll', {});
    expect(reply.statusCode).toBe(400);
    expect(JSON.parse(reply.body)).toMatchObject({
      error: {
        code: 'VALIDATION_FAILED',
        details: expect.arrayContaining([
          expect.objectContaining({
            path: 'body.enrollmentKey',
            message: 'Missing field enrollmentKey',
          }),
        ]),
      },
    });
  });
});
