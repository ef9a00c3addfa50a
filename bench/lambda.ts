/**
 * `npm run bench:lambda [-- --runs 5]`: the cold-start figures for every Lambda the stack deploys: the
 * bundle's size (minified, entry and chunks; the goal is under 300 KB for API functions) and its module initialisation time here
 * (a fresh Node.js process importing the bundle; the goal is under 150 ms), median of --runs runs. The bundles are
 * those of the synthesized stack itself (infra/aws), built offline as `npm run synth` builds them.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { App } from 'aws-cdk-lib';
import { projectRoot } from '#infra/aws/functions.ts';
import { LogbookStack } from '#infra/aws/logbook-stack.ts';
import { formatTable } from './support/table.ts';

const { values: args } = parseArgs({ options: { runs: { type: 'string', default: '5' } } });
const runs = Number(args.runs);

// Inside the project, so that the AWS SDK the bundles leave to the Lambda runtime resolves from node_modules.
const outdir = join(projectRoot, 'node_modules', '.cache', 'logbook-bench');
rmSync(outdir, { recursive: true, force: true });
const app = new App({ outdir, context: { 'aws:cdk:enable-asset-metadata': true } });
// The functions' bundles do not depend on the identity provider: measured as an agent-only stage would deploy them.
new LogbookStack(app, 'Logbook', { settings: { allowNoUserAuth: true } });
const template = app.synth().getStackByName('Logbook').template as {
  Resources: Record<
    string,
    { Type: string; Metadata?: Record<string, string>; Properties: { Description?: string; Environment?: unknown } }
  >;
};

/**
 * A Lambda's environment as far as module initialisation reads it: in Lambda, Powertools Metrics and Tracer (with the
 * X-Ray SDK) are loaded from the layer during the cold start (shared/observability), here from node_modules.
 */
const environment = {
  ...process.env,
  NODE_ENV: 'production',
  AWS_LAMBDA_FUNCTION_NAME: 'logbook-bench',
  AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs22.x',
  AWS_LAMBDA_INITIALIZATION_TYPE: 'on-demand',
  POWERTOOLS_SERVICE_NAME: 'logbook',
  POWERTOOLS_METRICS_NAMESPACE: 'Logbook',
  AWS_REGION: 'us-east-1',
  DB_CLUSTER_ARN: 'arn:aws:rds:us-east-1:123456789012:cluster:logbook',
  DB_NAME: 'logbook',
  APP_DB_SECRET_ARN: 'arn:aws:secretsmanager:us-east-1:123456789012:secret:app-AbCdEf',
};

function initMilliseconds(file: string): number {
  const script = `const t = performance.now(); await import(${JSON.stringify(file)}); process.stdout.write(String(performance.now() - t));`;
  const samples = Array.from({ length: runs }, () =>
    Number(
      execFileSync(process.execPath, ['--input-type=module', '-e', script], { env: environment, encoding: 'utf8' }),
    ),
  );
  return samples.sort((a, b) => a - b)[Math.floor(samples.length / 2)]!;
}

const rows: string[][] = [];
for (const [id, resource] of Object.entries(template.Resources)) {
  const assetPath = resource.Metadata?.['aws:asset:path'];
  if (resource.Type !== 'AWS::Lambda::Function' || !assetPath) continue;
  const dir = join(outdir, assetPath);
  const file = join(dir, 'index.mjs');
  if (!existsSync(file)) continue; // CDK's own functions (log retention), not bundled by this project
  // The entry and the chunks it imports on first use: all the code the function may run.
  const bytes = readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.mjs'))
    .reduce((sum, name) => sum + statSync(join(dir, name)).size, 0);
  const api = /Function[0-9A-F]{8}$/.test(id) && !id.startsWith('Retention');
  const kb = bytes / 1024;
  const ms = initMilliseconds(file);
  rows.push([
    id.replace(/[0-9A-F]{8}$/, ''),
    `${kb.toFixed(0)} KB`,
    `${ms.toFixed(0)} ms`,
    api ? (kb < 300 && ms < 150 ? 'yes' : 'NO') : '-',
  ]);
}
console.log(formatTable(['function', 'bundle (minified)', 'init (median)', 'API goal met (< 300 KB, < 150 ms)'], rows));
