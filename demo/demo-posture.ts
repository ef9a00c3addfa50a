import { type AuditContext, flushAudit } from '#shared/audit/writer.ts';
import { rolePermissions, scopedPermissions } from '#shared/auth/permissions.ts';
import type { Principal } from '#shared/auth/principal.ts';
import { hashSecret, newSecret, secretPrefixes, shownPart } from '#shared/auth/secrets.ts';
import type { Db } from '#shared/db/db.ts';
import { one } from '#shared/db/db.ts';
import { createEnrollmentKey, enrollAgent } from '#shared/hierarchy/enrollment.ts';
import { insertEnrollmentKey } from '#shared/hierarchy/store.ts';
import { uploadPosture } from '#shared/posture/snapshot.ts';
import { uploadReconciliation } from '#shared/reconciliation/reconcile.ts';
import { type Demo, demoIds } from './demo.ts';

type Scan = {
  daysAgo: number;
  categories: Record<string, { name: string; version?: string; status: 'active' | 'installed' }[]>;
};

const datto = (status: 'active' | 'installed') => ({ name: 'Datto RMM', version: '4.4.2240', status });
/**
 * A fleet half-way through a migration off Datto RMM: the old agent still active on some devices, only
 * installed on others, devices scanned clean, never scanned, and one whose last scan is stale.
 */
const fleet: [hostname: string, scan: Scan | null][] = [
  [
    'MIG-WS-01',
    {
      daysAgo: 0,
      categories: {
        rmm: [datto('active')],
        'remote-access': [{ name: 'ConnectWise ScreenConnect', status: 'active' }],
      },
    },
  ],
  ['MIG-WS-02', { daysAgo: 0, categories: { rmm: [datto('active')] } }],
  [
    'MIG-WS-03',
    {
      daysAgo: 1,
      categories: {
        rmm: [datto('active')],
        'remote-access': [{ name: 'TeamViewer', version: '15.48', status: 'installed' }],
      },
    },
  ],
  ['MIG-WS-04', { daysAgo: 0, categories: { rmm: [datto('installed')] } }],
  ['MIG-WS-05', { daysAgo: 2, categories: { rmm: [datto('installed')] } }],
  ['MIG-SRV-01', { daysAgo: 0, categories: { rmm: [{ name: 'NinjaOne', status: 'active' }] } }],
  ['MIG-WS-06', { daysAgo: 0, categories: {} }],
  ['MIG-WS-07', { daysAgo: 1, categories: {} }],
  ['MIG-WS-08', null],
  ['MIG-WS-09', null],
  ['MIG-WS-10', { daysAgo: 12, categories: { rmm: [datto('active')] } }],
];

/** The other RMM's device list: the fleet above and three laptops not enrolled yet. */
const oldRmmList = [...fleet.map(([hostname]) => hostname), 'MIG-LT-01', 'MIG-LT-02', 'MIG-LT-03'].map(
  (hostname, i) => ({ hostname, externalId: `datto-${1000 + i}` }),
);

/**
 * Seeds the migration fleet into the demo organization once, through the enrollment, posture and reconciliation
 * code paths: the other RMM's list reconciled half-way through the enrollments and again at the end (two points of
 * progress), and a fleet key whose deployment script carries the key.
 */
export async function seedDemoPostureFleet(admin: Db, demo: Demo): Promise<void> {
  const seeded = await one(
    admin,
    `SELECT 1 AS found FROM devices WHERE org_id = :orgId::uuid AND hostname LIKE 'MIG-%' LIMIT 1`,
    {
      orgId: demo.orgId,
    },
  );
  if (seeded) return;
  const audit: AuditContext = { db: admin, pending: [] };
  const partnerAdmin: Principal = {
    actorType: 'user',
    id: demoIds.partnerAdmin,
    email: 'admin@demo-msp.local',
    name: 'Demo Partner Admin',
    role: 'partner_admin',
    scope: 'partner',
    partnerId: demo.partnerId,
    orgId: null,
    permissions: scopedPermissions('partner', rolePermissions.partner_admin),
  };
  const reconcile = () => uploadReconciliation(admin, partnerAdmin, demo.orgId, { devices: oldRmmList }, audit);
  for (const [i, [hostname, scan]] of fleet.entries()) {
    if (i === 6) await reconcile();
    const key = newSecret(secretPrefixes.enrollmentKey);
    await insertEnrollmentKey(admin, {
      orgId: demo.orgId,
      siteId: null,
      name: `demo ${hostname}`,
      keyHash: hashSecret(key),
      keyPrefix: shownPart(key),
      expiresAt: null,
      createdBy: demoIds.partnerAdmin,
    });
    const enrolled = await enrollAgent(
      admin,
      {
        enrollmentKey: key,
        enrollmentSecret: process.env.AGENT_ENROLLMENT_SECRET,
        hostname,
        osType: 'windows',
        agentVersion: '1.0.0',
      },
      audit,
    );
    if (!scan) continue;
    const caller = {
      actorType: 'agent' as const,
      agentId: enrolled.agentId,
      deviceId: enrolled.deviceId,
      orgId: demo.orgId,
    };
    const collectedAt = new Date(Date.now() - scan.daysAgo * 86_400_000).toISOString();
    await uploadPosture(admin, caller, enrolled.agentId, { collectedAt, categories: scan.categories }, audit);
  }
  await reconcile();
  await createEnrollmentKey(admin, partnerAdmin, demo.orgId, { name: 'Migration wave 2', maxUsage: 1500 }, audit);
  await flushAudit(audit);
}
