/**
 * `npm start`: the service on this machine. The same handlers as in AWS behind a
 * local API Gateway, on an embedded PostgreSQL under .data/ unless DATABASE_URL is set.
 */

import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { startAgent } from '#demo/agent/agent.ts';
import { generateEventStore } from '#demo/agent/event-store.ts';
import { defaultMachine } from '#demo/agent/monitoring.ts';
import { seedDemo, signDemoUserTokens } from '#demo/demo.ts';
import { seedDemoPostureFleet } from '#demo/demo-posture.ts';
import { seedDemoTrail } from '#demo/demo-trail.ts';
import { defaultRoute, routes, wsRoutes } from '#functions/routes.ts';
import { pruneExpiredLogs } from '#shared/agent-logs/retention.ts';
import { configuredAnchorKey } from '#shared/audit/anchor-signing.ts';
import { useAnchorWitness } from '#shared/audit/anchor-witness.ts';
import { runIntegrityWatch } from '#shared/audit/integrity-watch.ts';
import { runRetention } from '#shared/audit/retention.ts';
import { useAuditSpool } from '#shared/audit/spool.ts';
import { sealWaitingIntents } from '#shared/audit/writer.ts';
import { configuredWitness, localWitnessDir } from '#shared/audit-streams/witness.ts';
import { jwtDefaults } from '#shared/auth/jwt.ts';
import { runDueInvoices } from '#shared/billing/due-run.ts';
import { appDb, auditAdminDb, closeAppDb, closeAuditAdminDb } from '#shared/db/client.ts';
import { selectDatabaseIdentity } from '#shared/db/identity.ts';
import { createPgDb } from '#shared/db/pg.ts';
import { selectConnection } from '#shared/live-query/store.ts';
import { pruneMonitoringData } from '#shared/monitoring/store.ts';
import { keepLocalJobsIn } from '#shared/queue/work-queue.ts';
import { localAnchorKeyFile, localAnchorKeyPem } from './anchor-key-file.ts';
import { fileAuditSpool } from './audit-file-spool.ts';
import { useLocalDataApi } from './data-api-server.ts';
import { embeddedDatabaseUnreachable } from './data-directory.ts';
import {
  devServerPort,
  embeddedPortFile,
  type LocalRole,
  prepareDatabase,
  roleUrls,
  roleUrlVariables,
} from './database.ts';
import { type RunningPostgres, startEmbeddedPostgres } from './embedded-postgres.ts';
import { startHttpGateway } from './http-gateway.ts';
import { loadWebSite } from './web-site.ts';
import { startWsGateway, useLocalManagementApi } from './ws-gateway.ts';

const dataDir = '.data';
const port = Number(process.env.PORT ?? 3000);
// The WebSocket API listens beside the HTTP API, one port up unless WS_PORT says otherwise (the agent counts on it).
const wsPort = Number(process.env.WS_PORT ?? port + 1);
// Unset: every interface, IPv6 and IPv4 where the host has IPv6, IPv4 alone where it has not.
const host = process.env.HOST || undefined;

/** JWT_SECRET, or one generated once and kept in .data/ so tokens survive restarts. */
function localJwtSecret(): string {
  return process.env.JWT_SECRET || localSecret('jwt-secret', 'base64url');
}

/** A random 32-byte secret generated once and kept in .data/<name>. */
function localSecret(name: string, encoding: 'base64' | 'base64url'): string {
  const file = `${dataDir}/${name}`;
  if (!existsSync(file)) {
    mkdirSync(dataDir, { recursive: true });
    writeFileSync(file, randomBytes(32).toString(encoding), { mode: 0o600 });
  }
  return readFileSync(file, 'utf8').trim();
}

/**
 * Delayed jobs (a schedule's next occurrence, an escalation step, a retry) are kept in .data/jobs, under the database
 * they belong to, until they ran: a restart arms them again, as SQS keeps them in AWS. Answers how many it armed.
 */
async function keepDelayedJobs(): Promise<number> {
  const { systemIdentifier, name } = await selectDatabaseIdentity(appDb());
  return keepLocalJobsIn(`${dataDir}/jobs/${systemIdentifier}-${name}`);
}

/**
 * The audit spool: audit writes that failed are kept in .data/audit-spool, under the database they belong
 * to, and replayed into it now and every minute, as the API's role; rows of other databases are kept and reported.
 * Each round first seals the audit intents a change committed without sealing (a server stopped between the two).
 * The returned stop replays once more.
 */
async function replayAuditSpool(): Promise<() => Promise<void>> {
  const spool = fileAuditSpool(`${dataDir}/audit-spool`, await selectDatabaseIdentity(appDb()));
  useAuditSpool(spool);
  for (const { database, rows } of await spool.held(appDb()))
    console.log(
      database
        ? `audit spool: ${rows} audit row(s) of database ${database.name} (system identifier ${database.systemIdentifier}) kept for it, not replayed here`
        : `audit spool: ${rows} audit row(s) spooled without their database in ${dataDir}/audit-spool: kept, not replayed`,
    );
  const replay = () =>
    sealWaitingIntents(appDb())
      .then(
        (sealed) => {
          if (sealed > 0) console.log(`audit: ${sealed} committed audit row(s) sealed late, with their own timestamps`);
        },
        (error: unknown) => console.error('audit: sealing the waiting audit rows failed; they stay waiting:', error),
      )
      .then(() => spool.replay(appDb()))
      .then(
        (replayed) => {
          if (replayed > 0)
            console.log(`audit spool: ${replayed} audit row(s) written late, with their own timestamps`);
        },
        (error: unknown) => console.error('audit spool: replay failed; the rows stay spooled:', error),
      );
  void replay();
  const timer = setInterval(() => void replay(), 60_000).unref();
  return async () => {
    clearInterval(timer);
    await replay();
  };
}

/**
 * Anchors between daily runs (ANCHOR_INTERVAL_MINUTES, as anchorIntervalMinutes schedules them in AWS): the integrity
 * watch alone, every N minutes, so that the window a database superuser could rewrite unwitnessed is that short.
 */
function scheduleAnchors(minutes: number): () => Promise<void> {
  let running: Promise<void> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const runOnce = async () => {
    const key = configuredAnchorKey();
    if (!key) return;
    const run = await runIntegrityWatch(auditAdminDb(), key, { stripes: false }).catch((error: unknown) => {
      console.error('anchors: the integrity watch failed:', error);
      return undefined;
    });
    for (const failure of run?.failures ?? [])
      console.error(
        `anchors: organization ${failure.orgId}: seq ${failure.seq}, kind ${failure.kind}: ${failure.meaning}`,
      );
  };
  const schedule = () => {
    timer = setTimeout(() => {
      running = runOnce().finally(() => {
        running = undefined;
        if (!stopped) schedule();
      });
    }, minutes * 60_000).unref();
  };
  schedule();
  return async () => {
    stopped = true;
    clearTimeout(timer);
    await running;
  };
}

/**
 * The daily retention worker, as EventBridge runs it in AWS: a minute after start, then every 24 hours, as
 * logbook_audit_admin (AUDIT_ADMIN_DATABASE_URL). The timer never keeps the process alive; the returned stop
 * interrupts a run between batches and waits for it.
 */
function scheduleRetention(): () => Promise<void> {
  const day = 24 * 60 * 60 * 1000;
  const stopping = new AbortController();
  let running: Promise<void> | undefined;
  let timer: NodeJS.Timeout | undefined;
  const runOnce = async () => {
    try {
      const run = await runRetention(auditAdminDb(), { signal: stopping.signal });
      const samples = await pruneMonitoringData(auditAdminDb(), stopping.signal);
      if (samples > 0)
        console.log(`retention: deleted ${samples.toLocaleString('en-US')} monitoring samples and results`);
      const logs = await pruneExpiredLogs(auditAdminDb(), { signal: stopping.signal });
      if (logs.agentLogsDeleted + logs.eventLogsDeleted > 0)
        console.log(
          `retention: deleted ${logs.agentLogsDeleted.toLocaleString('en-US')} diagnostic log entries and ${logs.eventLogsDeleted.toLocaleString('en-US')} stored events past their organization's windows`,
        );
      const pruned = run.organizations.filter((org) => org.rowsDeleted > 0).length;
      if (run.rowsDeleted > 0)
        console.log(
          `retention: deleted ${run.rowsDeleted.toLocaleString('en-US')} audit rows older than their policy from ${pruned} organization(s)`,
        );
      for (const org of run.organizations)
        if (org.error) console.error(`retention: organization ${org.orgId} could not be pruned: ${org.error}`);
    } catch (error) {
      console.error('retention: the daily run failed:', error);
    }
  };
  const schedule = (delay: number) => {
    timer = setTimeout(() => {
      running = runOnce().finally(() => {
        running = undefined;
        if (!stopping.signal.aborted) schedule(day);
      });
    }, delay).unref();
  };
  schedule(60_000);
  return async () => {
    stopping.abort();
    clearTimeout(timer);
    await running;
    await closeAuditAdminDb();
  };
}

/**
 * The daily billing due run, as EventBridge runs it in AWS: a minute after start, then every 24 hours, as
 * logbook_app. The timer never keeps the process alive; the returned stop waits for a run in progress.
 */
function scheduleBillingRun(): () => Promise<void> {
  const day = 24 * 60 * 60 * 1000;
  let stopped = false;
  let running: Promise<void> | undefined;
  let timer: NodeJS.Timeout | undefined;
  const schedule = (delay: number) => {
    timer = setTimeout(() => {
      running = runDueInvoices(appDb())
        .then((run) => {
          if (run.generated > 0) console.log(`billing: ${run.generated} invoice(s) generated, ${run.issued} issued`);
          if (run.failed > 0) console.error(`billing: ${run.failed} contract(s) could not be billed`);
        })
        .catch((error: unknown) => console.error('billing: the daily run failed:', error))
        .finally(() => {
          running = undefined;
          if (!stopped) schedule(day);
        });
    }, delay).unref();
  };
  schedule(60_000);
  return async () => {
    stopped = true;
    clearTimeout(timer);
    await running;
  };
}

async function main() {
  let adminUrl = process.env.DATABASE_URL;
  const unreachable = adminUrl ? undefined : embeddedDatabaseUnreachable(`${dataDir}/postgres`);
  if (unreachable) {
    console.error(unreachable);
    process.exit(1);
  }
  // The audit viewer builds (esbuild, in memory) while the database starts.
  const site = loadWebSite();
  let embedded: RunningPostgres | undefined;
  if (!adminUrl) {
    const embeddedPort = devServerPort();
    embedded = await startEmbeddedPostgres({ dir: `${dataDir}/postgres`, port: embeddedPort, log: console.error });
    writeFileSync(embeddedPortFile, `${embeddedPort}\n`);
    adminUrl = embedded.url;
  }
  // Only the roles whose connection is derived here get the local login; a given URL keeps its password.
  const derived = (Object.keys(roleUrlVariables) as LocalRole[]).filter((role) => !process.env[roleUrlVariables[role]]);
  await prepareDatabase(adminUrl, { log: (line) => console.log(line), logins: derived });
  const urls = roleUrls(adminUrl);
  for (const role of derived) process.env[roleUrlVariables[role]] = urls[role];
  // LOGBOOK_DB_DRIVER=data-api: the handlers and the retention worker reach the database through a local RDS Data API, as in Lambda.
  const dataApi = process.env.LOGBOOK_DB_DRIVER === 'data-api' ? await useLocalDataApi() : undefined;
  // With a JWKS URL the identity provider signs user tokens; a local secret would sign tokens nobody accepts.
  const jwksUrl = process.env.JWT_JWKS_URL;
  if (!jwksUrl) process.env.JWT_SECRET = localJwtSecret();
  // Enrollment keys sealed for their deployment scripts (shared/auth/key-seal.ts).
  process.env.ENROLLMENT_KEY_SEAL_KEY ||= localSecret('enrollment-key-seal-key', 'base64');
  // The integrity watch's signing key (shared/audit/anchor-signing.ts), generated once and shared with `npm run retention`.
  process.env.AUDIT_ANCHOR_PRIVATE_KEY ||= localAnchorKeyPem(localAnchorKeyFile);
  // The outside witness of anchors: a directory beside the embedded database (AUDIT_WITNESS for another database), an
  // S3 bucket with Object Lock in AWS.
  if (embedded) process.env.AUDIT_WITNESS ||= localWitnessDir;
  useAnchorWitness(configuredWitness({ streams: true }));

  const admin = createPgDb({ connectionString: adminUrl, max: 1 });
  const { demo, trailRows } = await seedDemo(admin)
    .then(async (demo) => {
      await seedDemoPostureFleet(admin, demo);
      return { demo, trailRows: await seedDemoTrail(admin, demo) };
    })
    .finally(() => admin.close());
  const gateway = await startHttpGateway({ port, host, routes, defaultRoute, site: await site });
  const wsGateway = await startWsGateway({ port: wsPort, host, routes: wsRoutes });
  useLocalManagementApi(wsGateway);
  // The demo device's simulated Windows agent, so that live queries answer at once (docs/live-query.md).
  const demoAgent = startAgent({
    server: gateway.url,
    wsUrl: wsGateway.url,
    agentId: demo.agentId,
    token: demo.agentToken,
    store: generateEventStore({ computer: 'demo-device' }),
    // Metrics and checks for the demo's monitoring policies (docs/monitoring.md).
    machine: defaultMachine(),
    // Another agent using AGENT_TOKEN takes the demo device's channel over; the demo agent comes back once it left.
    mayResume: async () => !(await selectConnection(appDb(), demo.deviceId)),
    log: (line) => console.log(`[demo agent] ${line}`),
  });
  const stopRetention = scheduleRetention();
  const stopBillingRun = scheduleBillingRun();
  const anchorMinutes = Number(process.env.ANCHOR_INTERVAL_MINUTES) || 0;
  const stopAnchors = anchorMinutes > 0 ? scheduleAnchors(anchorMinutes) : async () => undefined;
  const stopSpool = await replayAuditSpool();
  const rearmed = await keepDelayedJobs();

  const origin = `http://localhost:${gateway.port}`;
  const base = `${origin}/api/v1`;
  const tokens = jwksUrl ? undefined : await signDemoUserTokens(demo);
  const viewer = tokens
    ? `  ${origin}/#token=${tokens.partnerAdmin}
  (signs in as the demo partner administrator; or open ${origin}/ and paste a token)`
    : `  ${origin}/   (paste a user token from the identity provider)`;
  const userTokens = tokens
    ? `  export PLATFORM_ADMIN_TOKEN=${tokens.platformAdmin}
  export PARTNER_ADMIN_TOKEN=${tokens.partnerAdmin}
  export ORG_ADMIN_TOKEN=${tokens.orgAdmin}`
    : `  # User tokens come from the identity provider at JWT_JWKS_URL (export one as ORG_ADMIN_TOKEN); this server signs none.
  # Their claims name partnerId ${demo.partnerId} and, for organization users, orgId ${demo.orgId}.`;
  console.log(`
Logbook is running
  HTTP API      ${base}   (OpenAPI document: ${base}/openapi.json)
  Audit viewer  ${origin}/
  WebSocket API ws://localhost:${wsGateway.port}   (agents' live-query channel; management API on the same port)
  Database      ${embedded ? `embedded PostgreSQL 17 in ${dataDir}/postgres (${adminUrl})` : 'DATABASE_URL'}${dataApi ? `\n  Data API      ${dataApi.url} (LOGBOOK_DB_DRIVER=data-api)` : ''}

${jwksUrl ? `JWT settings (JWKS)\n  JWT_JWKS_URL=${jwksUrl}` : `JWT settings (HS256)\n  JWT_SECRET=${process.env.JWT_SECRET}`}
  JWT_ISSUER=${process.env.JWT_ISSUER || jwtDefaults.issuer}
  JWT_AUDIENCE=${process.env.JWT_AUDIENCE || jwtDefaults.audience}

Demo tenant
  partner ${demo.partnerId}  organization ${demo.orgId}  site ${demo.siteId}
  device ${demo.deviceId}  agent ${demo.agentId}${trailRows > 0 ? `\n  demo audit trail: ${trailRows.toLocaleString('en-US')} rows written (Demo Organization and Northwind Traders)` : ''}${rearmed > 0 ? `\n  delayed jobs kept from the last run: ${rearmed} armed again (${dataDir}/jobs)` : ''}

Audit-log viewer
${viewer}

Demo tokens (${tokens ? 'user tokens valid 24 hours; ' : ''}paste into a shell; the README's examples use them)
  export LOGBOOK_API=${base}
  export PARTNER_ID=${demo.partnerId}
  export ORG_ID=${demo.orgId}
  export SITE_ID=${demo.siteId}
  export DEVICE_ID=${demo.deviceId}
  export AGENT_ID=${demo.agentId}
${userTokens}
  export AGENT_TOKEN=${demo.agentToken}

Try
  curl -H "Authorization: Bearer $ORG_ADMIN_TOKEN" "$LOGBOOK_API/devices"
  curl -H "Authorization: Bearer $ORG_ADMIN_TOKEN" "$LOGBOOK_API/system-tools/devices/$DEVICE_ID/eventlogs"
  curl -H "Authorization: Bearer $ORG_ADMIN_TOKEN" "$LOGBOOK_API/devices/$DEVICE_ID/eventlogs/security/events?eventId=4625&limit=5"
`);

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`\n${signal}: stopping`);
    await demoAgent.stop();
    await wsGateway.close();
    await gateway.close();
    await stopAnchors();
    await stopRetention();
    await stopBillingRun();
    await stopSpool();
    await closeAppDb();
    await dataApi?.close();
    if (embedded) {
      await embedded.stop();
      rmSync(embeddedPortFile, { force: true });
    }
    process.exit(0);
  };
  // embedded-postgres's exit hook would end the process (code 130) a few milliseconds after the signal, racing
  // the stop below, which stops the embedded database itself.
  process.removeAllListeners('SIGINT').removeAllListeners('SIGTERM');
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

main().catch((error: unknown) => {
  console.error('Logbook failed to start:', error);
  process.exit(1);
});
