/**
 * `npm run retention`: the audit retention worker (shared/audit/retention.ts) run once, now, as the role
 * logbook_audit_admin. The same configuration as `npm start`: AUDIT_ADMIN_DATABASE_URL, else the audit-admin login
 * derived from DATABASE_URL, else the embedded database of a running `npm start`. Exit status 0: done (or rehearsed);
 * 2: a usage error, the database unreachable, or an organization that could not be pruned.
 */
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { localAnchorKeyFile, localAnchorKeyPem } from '#infra/local/anchor-key-file.ts';
import { embeddedUrl, roleUrls } from '#infra/local/database.ts';
import { configuredAnchorKey } from '#shared/audit/anchor-signing.ts';
import { useAnchorWitness } from '#shared/audit/anchor-witness.ts';
import {
  type OrganizationRetention,
  type RetentionProgress,
  type RetentionRun,
  runRetention,
} from '#shared/audit/retention.ts';
import { configuredWitness, localWitnessDir } from '#shared/audit-streams/witness.ts';
import { createPgDb } from '#shared/db/pg.ts';
import { count, location, progressLine, reason, rows, runCommand, usageError } from './cli.ts';

const usage = `Usage:
  npm run retention [-- --dry-run] [--as-of <instant>] [--progress]

  Deletes, per organization with an audit retention policy, the oldest contiguous audit rows older than its
  retentionDays, and records each cut (organizations without a policy are skipped).

  --dry-run          report per organization what would be deleted; delete and record nothing
  --as-of <instant>  evaluate the windows as of this moment (ISO 8601 with offset) instead of now;
                     recorded in each organization's system.audit.retention event
  --progress         show the progress line even when stderr is not a terminal

  Database: AUDIT_ADMIN_DATABASE_URL; else the logbook_audit_admin login derived from DATABASE_URL;
  else the embedded database of a running \`npm start\` (127.0.0.1, port EMBEDDED_PG_PORT, else .data/postgres.port).

Exit status: 0 done, 2 usage error or failure.`;

const organizations = (n: number) => `${count(n)} organization${n === 1 ? '' : 's'}`;

/** Where the worker connects, and how that was decided (the message of a connection failure names it). */
function auditAdminConnection(): { url: string; source: string } {
  if (process.env.AUDIT_ADMIN_DATABASE_URL)
    return { url: process.env.AUDIT_ADMIN_DATABASE_URL, source: 'AUDIT_ADMIN_DATABASE_URL' };
  if (process.env.DATABASE_URL)
    return {
      url: roleUrls(process.env.DATABASE_URL).auditAdmin,
      source: 'the audit-admin login derived from DATABASE_URL',
    };
  // The embedded database of `npm start` (infra/local/main.ts, embedded-postgres.ts), whose role logins it set.
  const embedded = embeddedUrl();
  return {
    url: roleUrls(embedded).auditAdmin,
    source: 'the embedded database of `npm start`: is it running? Or set DATABASE_URL',
  };
}

/** "organizations done / total, rows deleted" while the run goes on. */
function retentionProgress(dryRun: boolean, enabled: boolean) {
  const line = progressLine(enabled);
  return {
    update({ organizations: total, organizationsDone, rowsDeleted }: RetentionProgress) {
      line.show(
        `retention: ${count(organizationsDone)} / ${organizations(total)} done, ${rows(rowsDeleted)} ${dryRun ? 'to delete' : 'deleted'}`,
        organizationsDone >= total,
      );
    },
    end: line.end,
  };
}

function describe(org: OrganizationRetention): string {
  const who = `organization ${org.orgId} (${org.orgName})`;
  const window = `older than ${org.cutoff}, ${count(org.retentionDays)} days`;
  if (org.error) return `failed: ${who}: ${org.error}`;
  if (org.rowsDeleted === 0) return `${who}: nothing to delete (${window})`;
  return `${who}: ${rows(org.rowsDeleted)}, seq ${org.fromSeq}..${org.throughSeq} (${window})`;
}

function report(run: RetentionRun): void {
  for (const org of run.organizations) {
    if (org.error) console.error(describe(org));
    else if (run.dryRun) console.log(`${org.rowsDeleted > 0 ? 'would prune ' : ''}${describe(org)}`);
    else if (org.rowsDeleted > 0) console.log(`pruned ${describe(org)}`);
  }
  const pruned = run.organizations.filter((org) => org.rowsDeleted > 0).length;
  const scope = `${count(pruned)} of ${organizations(run.organizations.length)} with a policy; ${organizations(run.skipped)} without one skipped; as of ${run.asOf}`;
  if (run.dryRun) console.log(`dry run: ${rows(run.rowsDeleted)} would be deleted from ${scope}. Nothing was deleted.`);
  else console.log(`done: ${rows(run.rowsDeleted)} deleted from ${scope}.`);
  if (run.failed > 0) console.error(`error: ${organizations(run.failed)} could not be pruned (shown above)`);
  if (run.ingestKeysDeleted > 0)
    console.log(`ingestion: ${count(run.ingestKeysDeleted)} idempotency keys older than 25 hours deleted.`);
  if (run.integrity) {
    for (const f of run.integrity.failures)
      console.error(
        `integrity: organization ${f.orgId}: break at seq ${f.seq}, kind ${f.kind}: ${f.meaning}; no anchor written`,
      );
    console.log(
      `integrity: ${count(run.integrity.anchors.length)} of ${organizations(run.integrity.organizations)} verified in full (${rows(run.integrity.rowsVerified)}) and anchored.`,
    );
  }
}

/** The command line's options; throws on an unknown or malformed one. */
const parseOptions = (argv: string[]) =>
  parseArgs({
    args: argv,
    options: {
      'dry-run': { type: 'boolean', default: false },
      'as-of': { type: 'string' },
      progress: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
    allowPositionals: false,
  });

async function main(argv: string[]): Promise<number> {
  let values: ReturnType<typeof parseOptions>['values'];
  try {
    ({ values } = parseOptions(argv));
  } catch (error) {
    return usageError(usage, reason(error));
  }
  if (values.help) {
    console.log(usage);
    return 0;
  }
  let asOf: Date | undefined;
  if (values['as-of'] !== undefined) {
    if (!z.iso.datetime({ offset: true }).safeParse(values['as-of']).success)
      return usageError(usage, `--as-of: give an ISO 8601 instant with offset, such as 2026-01-31T00:00:00Z`);
    asOf = new Date(values['as-of']);
  }
  const dryRun = values['dry-run'];

  // The integrity watch's signing key: AUDIT_ANCHOR_PRIVATE_KEY, else the one `npm start` keeps in .data/.
  process.env.AUDIT_ANCHOR_PRIVATE_KEY ||= localAnchorKeyPem(localAnchorKeyFile);
  const anchorKey = configuredAnchorKey();
  // Each anchor is published to the outside witness too: AUDIT_WITNESS, else, on the database of `npm start`, its own.
  if (!process.env.DATABASE_URL && !process.env.AUDIT_ADMIN_DATABASE_URL) process.env.AUDIT_WITNESS ||= localWitnessDir;
  useAnchorWitness(configuredWitness());
  const { url, source } = auditAdminConnection();
  const db = createPgDb({ connectionString: url, max: 1, applicationName: 'logbook-retention' });
  const progress = retentionProgress(dryRun, values.progress || process.stderr.isTTY === true);
  try {
    let run: RetentionRun;
    try {
      run = await runRetention(db, { dryRun, asOf, onProgress: progress.update, anchorKey });
    } catch (error) {
      progress.end();
      console.error(
        `error: cannot run retention in the database at ${location(url)} as logbook_audit_admin (${source}): ${reason(error)}`,
      );
      return 2;
    }
    progress.end();
    report(run);
    return run.failed > 0 || (run.integrity?.failures.length ?? 0) > 0 ? 2 : 0;
  } finally {
    await db.close();
  }
}

runCommand(() => main(process.argv.slice(2)));
