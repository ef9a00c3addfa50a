/**
 * `npm start`: the service on this machine. The same handlers as in AWS behind a
 * local API Gateway, on an embedded PostgreSQL under .data/ unless DATABASE_URL is set.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { routes } from '#functions/routes.ts';
import { closeAppDb } from '#shared/db/client.ts';
import { createPgDb } from '#shared/db/pg.ts';
import { jwtDefaults } from '#shared/auth/jwt.ts';
import { prepareDatabase, roleUrls, roleUrlVariables, type LocalRole } from './database.ts';
import { seedDemo, signDemoUserTokens } from './demo.ts';
import { startEmbeddedPostgres, type RunningPostgres } from './embedded-postgres.ts';
import { startHttpGateway } from './http-gateway.ts';

const dataDir = '.data';
const port = Number(process.env.PORT ?? 3000);
// Unset: every interface, IPv6 and IPv4 where the host has IPv6, IPv4 alone where it has not.
const host = process.env.HOST || undefined;

/** JWT_SECRET, or one generated once and kept in .data/ so tokens survive restarts. */
function localJwtSecret(): string {
  if (process.env.JWT_SECRET) return process.env.JWT_SECRET;
  const file = `${dataDir}/jwt-secret`;
  if (!existsSync(file)) {
    mkdirSync(dataDir, { recursive: true });
    writeFileSync(file, randomBytes(32).toString('base64url'), { mode: 0o600 });
  }
  return readFileSync(file, 'utf8').trim();
}

async function main() {
  let embedded: RunningPostgres | undefined;
  let adminUrl = process.env.DATABASE_URL;
  if (!adminUrl) {
    embedded = await startEmbeddedPostgres({ dir: `${dataDir}/postgres`, port: Number(process.env.EMBEDDED_PG_PORT ?? 54329), log: console.error });
    adminUrl = embedded.url;
  }
  // Only the roles whose connection is derived here get the local login; a given URL keeps its password.
  const derived = (Object.keys(roleUrlVariables) as LocalRole[]).filter((role) => !process.env[roleUrlVariables[role]]);
  await prepareDatabase(adminUrl, { log: (line) => console.log(line), logins: derived });
  const urls = roleUrls(adminUrl);
  for (const role of derived) process.env[roleUrlVariables[role]] = urls[role];
  // With a JWKS URL the identity provider signs user tokens; a local secret would sign tokens nobody accepts.
  const jwksUrl = process.env.JWT_JWKS_URL;
  if (!jwksUrl) process.env.JWT_SECRET = localJwtSecret();

  const admin = createPgDb({ connectionString: adminUrl, max: 1 });
  const demo = await seedDemo(admin).finally(() => admin.close());
  const gateway = await startHttpGateway({ port, host, routes });

  const base = `http://localhost:${gateway.port}/api/v1`;
  const tokens = jwksUrl ? undefined : await signDemoUserTokens(demo);
  const userTokens = tokens
    ? `  export PLATFORM_ADMIN_TOKEN=${tokens.platformAdmin}
  export PARTNER_ADMIN_TOKEN=${tokens.partnerAdmin}
  export ORG_ADMIN_TOKEN=${tokens.orgAdmin}`
    : `  # User tokens come from the identity provider at JWT_JWKS_URL (export one as ORG_ADMIN_TOKEN); this server signs none.
  # Their claims name partnerId ${demo.partnerId} and, for organization users, orgId ${demo.orgId}.`;
  console.log(`
Logbook is running
  HTTP API      ${base}   (OpenAPI document: ${base}/openapi.json)
  Database      ${embedded ? `embedded PostgreSQL 17 in ${dataDir}/postgres (${adminUrl})` : 'DATABASE_URL'}

${jwksUrl ? `JWT settings (JWKS)\n  JWT_JWKS_URL=${jwksUrl}` : `JWT settings (HS256)\n  JWT_SECRET=${process.env.JWT_SECRET}`}
  JWT_ISSUER=${process.env.JWT_ISSUER || jwtDefaults.issuer}
  JWT_AUDIENCE=${process.env.JWT_AUDIENCE || jwtDefaults.audience}

Demo tenant
  partner ${demo.partnerId}  organization ${demo.orgId}  site ${demo.siteId}
  device ${demo.deviceId}  agent ${demo.agentId}

Demo tokens (${tokens ? 'user tokens valid 24 hours; ' : ''}paste into a shell)
${userTokens}
  export AGENT_TOKEN=${demo.agentToken}

Try
  curl -H "Authorization: Bearer $ORG_ADMIN_TOKEN" ${base}/devices
`);

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`\n${signal}: stopping`);
    await gateway.close();
    await closeAppDb();
    await embedded?.stop();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

main().catch((error: unknown) => {
  console.error('Logbook failed to start:', error);
  process.exit(1);
});
