import { signUserToken } from '#infra/local/tokens.ts';
import { type AuditContext, flushAudit } from '#shared/audit/writer.ts';
import { hashSecret, newSecret, secretPrefixes, shownPart } from '#shared/auth/secrets.ts';
import type { Db } from '#shared/db/db.ts';
import { one } from '#shared/db/db.ts';
import { enrollAgent } from '#shared/hierarchy/enrollment.ts';
import { insertOrganizationWithSite } from '#shared/hierarchy/organizations.ts';
import { insertEnrollmentKey } from '#shared/hierarchy/store.ts';
import { simulatedSerial } from './agent/identity.ts';

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
  /** The demo agent's bearer token, fresh on every start. */
  agentToken: string;
}

/**
 * Seeds a demo partner, organization, site and enrolled device through the service's own
 * code paths, once: a restart finds them again (and recreates what was deleted since).
 * Rotates the demo agent's token, since only its hash is stored.
 */
export async function seedDemo(admin: Db): Promise<Demo> {
  await admin.query(`INSERT INTO partners (id, name) VALUES (:id::uuid, 'Demo MSP') ON CONFLICT (id) DO NOTHING`, {
    id: demoIds.partner,
  });
  const org =
    (await one<{ id: string }>(
      admin,
      `SELECT id FROM organizations WHERE partner_id = :partnerId::uuid AND name = 'Demo Organization' AND deleted_at IS NULL ORDER BY created_at LIMIT 1`,
      { partnerId: demoIds.partner },
    )) ??
    (await admin.transaction((tx) =>
      insertOrganizationWithSite(
        tx,
        { partnerId: demoIds.partner, name: 'Demo Organization' },
        { name: 'Main Office' },
      ),
    ));
  const device = await one<{ deviceId: string; agentId: string; siteId: string }>(
    admin,
    `SELECT d.id AS "deviceId", a.id AS "agentId", d.site_id AS "siteId" FROM devices d JOIN agents a ON a.device_id = d.id
      WHERE d.org_id = :orgId::uuid AND d.hostname = 'demo-device' AND d.deleted_at IS NULL ORDER BY d.created_at LIMIT 1`,
    { orgId: org.id },
  );
  if (!device) {
    const key = newSecret(secretPrefixes.enrollmentKey);
    await insertEnrollmentKey(admin, {
      orgId: org.id,
      siteId: null,
      name: 'demo',
      keyHash: hashSecret(key),
      keyPrefix: shownPart(key),
      expiresAt: null,
      createdBy: demoIds.partnerAdmin,
    });
    const audit: AuditContext = { db: admin, pending: [] };
    const enrolled = await enrollAgent(
      admin,
      {
        enrollmentKey: key,
        enrollmentSecret: process.env.AGENT_ENROLLMENT_SECRET,
        hostname: 'demo-device',
        serialNumber: simulatedSerial('demo-device'),
        osType: 'linux',
        osVersion: 'Debian 12',
        agentVersion: '1.0.0',
      },
      audit,
    );
    await flushAudit(audit);
    return {
      partnerId: demoIds.partner,
      orgId: org.id,
      siteId: enrolled.siteId,
      deviceId: enrolled.deviceId,
      agentId: enrolled.agentId,
      agentToken: enrolled.token,
    };
  }
  const agentToken = newSecret(secretPrefixes.agentToken);
  await admin.query('UPDATE agents SET token_hash = :hash::text, revoked_at = NULL WHERE id = :id::uuid', {
    hash: hashSecret(agentToken),
    id: device.agentId,
  });
  return { partnerId: demoIds.partner, orgId: org.id, ...device, agentToken };
}

/** Demo user tokens, HS256 with JWT_SECRET, valid a day: a platform, a partner and an organization administrator. */
export async function signDemoUserTokens(demo: Demo) {
  const day = { expiresIn: '24h' };
  return {
    platformAdmin: await signUserToken(
      {
        sub: demoIds.platformAdmin,
        email: 'platform@logbook.local',
        name: 'Platform Admin',
        role: 'platform_admin',
        scope: 'platform',
      },
      day,
    ),
    partnerAdmin: await signUserToken(
      {
        sub: demoIds.partnerAdmin,
        email: 'admin@demo-msp.local',
        name: 'Demo Partner Admin',
        role: 'partner_admin',
        scope: 'partner',
        partnerId: demo.partnerId,
      },
      day,
    ),
    orgAdmin: await signUserToken(
      {
        sub: demoIds.orgAdmin,
        email: 'admin@demo-org.local',
        name: 'Demo Org Admin',
        role: 'org_admin',
        scope: 'organization',
        partnerId: demo.partnerId,
        orgId: demo.orgId,
      },
      day,
    ),
  };
}
