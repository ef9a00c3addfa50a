import type { Db } from '#shared/db/db.ts';
import { one } from '#shared/db/db.ts';
import { hashSecret, newSecret, secretPrefixes, shownPart } from '#shared/auth/secrets.ts';
import { enrollAgent } from '#shared/hierarchy/enrollment.ts';
import { insertEnrollmentKey, insertOrganization } from '#shared/hierarchy/store.ts';
import { signUserToken } from './tokens.ts';

/** Fixed ids of the demo tenant, so restarts find it again. */
export const demoIds = {
  platformAdmin: '00000000-0000-4000-8000-00000000000a',
  partnerAdmin: '00000000-0000-4000-8000-00000000000b',
  orgAdmin: '00000000-0000-4000-8000-00000000000c',
  partner: '00000000-0000-4000-8000-000000000001',
};

export interface Demo {
  partnerId: string;
  orgId: string;
  siteId: string;
  deviceId: string;
  agentId: string;
  tokens: { platformAdmin: string; partnerAdmin: string; orgAdmin: string; agent: string };
}

/**
 * Seeds (once) a demo partner, organization, site and enrolled device through the
 * service's own code paths, rotates the demo agent's token, and signs demo user tokens.
 */
export async function seedDemo(admin: Db): Promise<Demo> {
  await admin.query(`INSERT INTO partners (id, name) VALUES (:id::uuid, 'Demo MSP') ON CONFLICT (id) DO NOTHING`, { id: demoIds.partner });
  let org = await one<{ id: string }>(admin, `SELECT id FROM organizations WHERE partner_id = :partnerId::uuid AND name = 'Demo Organization' ORDER BY created_at LIMIT 1`, {
    partnerId: demoIds.partner,
  });
  if (!org) {
    org = await admin.transaction((tx) => insertOrganization(tx, { partnerId: demoIds.partner, name: 'Demo Organization' }, { name: 'Main Office' }));
  }
  let device = await one<{ deviceId: string; agentId: string; siteId: string }>(
    admin,
    `SELECT d.id AS "deviceId", a.id AS "agentId", d.site_id AS "siteId" FROM devices d JOIN agents a ON a.device_id = d.id
      WHERE d.org_id = :orgId::uuid AND d.hostname = 'demo-device' AND d.deleted_at IS NULL ORDER BY d.created_at LIMIT 1`,
    { orgId: org.id },
  );
  let agentToken: string;
  if (!device) {
    const key = newSecret(secretPrefixes.enrollmentKey);
    await insertEnrollmentKey(admin, { orgId: org.id, siteId: null, name: 'demo', keyHash: hashSecret(key), keyPrefix: shownPart(key), expiresAt: null, createdBy: demoIds.partnerAdmin });
    const enrolled = await enrollAgent(admin, { enrollmentKey: key, enrollmentSecret: process.env.AGENT_ENROLLMENT_SECRET, hostname: 'demo-device', osType: 'linux', osVersion: 'Debian 12', agentVersion: '1.0.0' });
    device = (await one(admin, `SELECT d.id AS "deviceId", :agentId::uuid AS "agentId", d.site_id AS "siteId" FROM devices d WHERE d.id = :id::uuid`, {
      id: enrolled.deviceId,
      agentId: enrolled.agentId,
    })) as { deviceId: string; agentId: string; siteId: string };
    agentToken = enrolled.token;
  } else {
    // Only the hash is stored, so each start issues the demo agent a fresh token.
    agentToken = newSecret(secretPrefixes.agentToken);
    await admin.query('UPDATE agents SET token_hash = :hash::text, revoked_at = NULL WHERE id = :id::uuid', { hash: hashSecret(agentToken), id: device.agentId });
  }
  const day = '24h';
  return {
    partnerId: demoIds.partner,
    orgId: org.id,
    siteId: device.siteId,
    deviceId: device.deviceId,
    agentId: device.agentId,
    tokens: {
      platformAdmin: await signUserToken({ sub: demoIds.platformAdmin, email: 'platform@logbook.local', name: 'Platform Admin', role: 'platform_admin', scope: 'platform' }, { expiresIn: day }),
      partnerAdmin: await signUserToken(
        { sub: demoIds.partnerAdmin, email: 'admin@demo-msp.local', name: 'Demo Partner Admin', role: 'partner_admin', scope: 'partner', partnerId: demoIds.partner },
        { expiresIn: day },
      ),
      orgAdmin: await signUserToken(
        { sub: demoIds.orgAdmin, email: 'admin@demo-org.local', name: 'Demo Org Admin', role: 'org_admin', scope: 'organization', partnerId: demoIds.partner, orgId: org.id },
        { expiresIn: day },
      ),
      agent: agentToken,
    },
  };
}
