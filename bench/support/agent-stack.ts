import { randomBytes } from 'node:crypto';
import { routes, wsRoutes } from '#functions/routes.ts';
import { localRolePasswords, roleUrls } from '#infra/local/database.ts';
import { startHttpGateway } from '#infra/local/http-gateway.ts';
import { startWsGateway, useLocalManagementApi } from '#infra/local/ws-gateway.ts';
import { closeAppDb } from '#shared/db/client.ts';
import type { Db } from '#shared/db/db.ts';
import { createPgDb } from '#shared/db/pg.ts';
import { grantRoleLogins } from '#shared/db/roles.ts';
import { insertOrganizationWithSite } from '#shared/hierarchy/organizations.ts';
import { insertPartner } from '#shared/hierarchy/store.ts';
import { insertFleetKey } from './fleet-key.ts';
import { createScratchDatabase } from './scratch-database.ts';

export interface AgentStack {
  /** Superuser connection to the scratch database. */
  admin: Db;
  orgId: string;
  /** A fleet enrollment key of the organization. */
  enrollmentKey: string;
  /** The HTTP gateway's base URL and the WebSocket gateway's URL. */
  base: string;
  wsUrl: string;
  /** Closes the gateways and the connections and drops the scratch database. */
  close(): Promise<void>;
}

/**
 * What the agent benchmarks run against: the API's routes behind the local HTTP and WebSocket gateways, on a scratch
 * database with one partner, one organization and its fleet enrollment key, the API's connection as the app role.
 */
export async function startAgentStack(purpose: string): Promise<AgentStack> {
  const scratch = await createScratchDatabase(purpose);
  const admin = createPgDb({ connectionString: scratch.url, max: 2, applicationName: 'logbook-bench' });
  let http: Awaited<ReturnType<typeof startHttpGateway>> | undefined;
  let ws: Awaited<ReturnType<typeof startWsGateway>> | undefined;
  const close = async () => {
    await ws?.close();
    await http?.close();
    await closeAppDb();
    await admin.close();
    await scratch.drop();
  };
  try {
    await grantRoleLogins(admin, { app: localRolePasswords.app });
    process.env.APP_DATABASE_URL = roleUrls(scratch.url).app;
    process.env.JWT_SECRET ??= randomBytes(32).toString('base64url');
    process.env.LOG_LEVEL ??= 'WARN';
    const partner = (await insertPartner(admin, 'Bench MSP')) as { id: string };
    const org = await admin.transaction((tx) =>
      insertOrganizationWithSite(tx, { partnerId: partner.id, name: 'Bench Corp' }, { name: 'Headquarters' }),
    );
    const enrollmentKey = await insertFleetKey(admin, org.id);
    http = await startHttpGateway({ port: 0, host: '127.0.0.1', routes });
    ws = await startWsGateway({ port: 0, host: '127.0.0.1', routes: wsRoutes });
    useLocalManagementApi(ws);
    return { admin, orgId: org.id, enrollmentKey, base: http.url, wsUrl: ws.url, close };
  } catch (error) {
    await close();
    throw error;
  }
}
