import type { Principal } from '../auth/principal.ts';
import { type OrganizationRow, orgColumns } from '../auth/store.ts';
import { orgTenantSql, tenantParams } from '../auth/tenancy.ts';
import { type Db, one } from '../db/db.ts';
import { likePattern } from '../db/like-pattern.ts';
import { type Page, selectPage } from '../db/page.ts';
import type { AgentStatus } from './schemas.ts';

type PartnerRow = { id: string; name: string; createdAt: Date; updatedAt: Date };

type SiteRow = {
  id: string;
  orgId: string;
  name: string;
  timezone: string | null;
  address: string | null;
  createdAt: Date;
  updatedAt: Date;
};

export type DeviceRow = {
  id: string;
  orgId: string;
  siteId: string;
  agentId: string | null;
  hostname: string;
  displayName: string | null;
  serialNumber: string | null;
  osType: string | null;
  osVersion: string | null;
  role: 'workstation' | 'server' | null;
  agentVersion: string | null;
  lastSeenAt: Date | null;
  online: boolean;
  lastIp: string | null;
  agentStatus: AgentStatus | null;
  createdAt: Date;
  updatedAt: Date;
};

/** An enrollment key as listed: never the key itself, only its first characters. */
type EnrollmentKeyRow = {
  id: string;
  orgId: string;
  siteId: string | null;
  name: string | null;
  keyPrefix: string;
  expiresAt: Date | null;
  revokedAt: Date | null;
  maxUsage: number;
  usageCount: number;
  createdAt: Date;
};

const partnerColumns = `p.id, p.name, p.created_at AS "createdAt", p.updated_at AS "updatedAt"`;
const siteColumns = `s.id, s.org_id AS "orgId", s.name, s.timezone, s.address, s.created_at AS "createdAt", s.updated_at AS "updatedAt"`;
/**
 * A device's fields as the API shows them, from `devices d LEFT JOIN agents a ON a.device_id = d.id`. Online: its agent
 * holds a live WebSocket connection, or was seen within the online window of 5 minutes (onlineWindowMinutes of
 * shared/agents/online.ts, which imports this domain; the `online` filter field says the same).
 */
export const deviceColumns = `d.id, d.org_id AS "orgId", d.site_id AS "siteId", a.id AS "agentId", d.hostname, d.display_name AS "displayName",
  d.serial_number AS "serialNumber", d.os_type AS "osType", d.os_version AS "osVersion", d.role, d.agent_version AS "agentVersion", d.last_seen_at AS "lastSeenAt",
  (EXISTS (SELECT 1 FROM agent_connections c WHERE c.device_id = d.id)
   OR coalesce(d.last_seen_at >= now() - interval '5 minutes', false)) AS online,
  d.last_ip AS "lastIp", d.agent_status AS "agentStatus", d.created_at AS "createdAt", d.updated_at AS "updatedAt"`;
const deviceFrom = `devices d JOIN organizations o ON o.id = d.org_id AND o.deleted_at IS NULL LEFT JOIN agents a ON a.device_id = d.id`;

// Partners

export async function insertPartner(db: Db, name: string): Promise<PartnerRow> {
  const partner = await one<PartnerRow>(
    db,
    `INSERT INTO partners AS p (name) VALUES (:name::text) RETURNING ${partnerColumns}`,
    { name },
  );
  return partner!;
}

export function partnerExists(db: Db, id: string) {
  return one(db, 'SELECT 1 AS found FROM partners WHERE id = :id::uuid', { id }).then(Boolean);
}

export function selectPartners(db: Db, filter: { search?: string }, page: Page) {
  return selectPage<PartnerRow>(
    db,
    partnerColumns,
    `partners p WHERE (:search::text IS NULL OR p.name ILIKE :search::text)`,
    'p.name, p.id',
    { search: filter.search && likePattern(filter.search) },
    page,
  );
}

// Organizations

export async function insertOrganization(tx: Db, org: { partnerId: string; name: string; externalId?: string }) {
  const created = await one<OrganizationRow>(
    tx,
    `INSERT INTO organizations AS o (partner_id, name, external_id) VALUES (:partnerId::uuid, :name::text, :externalId::text) RETURNING ${orgColumns}`,
    { partnerId: org.partnerId, name: org.name, externalId: org.externalId ?? null },
  );
  return created!;
}

/**
 * Locks the live organization's row until commit. Site deletions take it FOR UPDATE (so they take
 * turns and the last site survives); every writer that relies on a live site takes it FOR SHARE
 * before any other lock, so it waits for a deletion instead of deadlocking with it.
 */
export function lockOrganization(tx: Db, id: string, mode: 'update' | 'share') {
  return one(
    tx,
    `SELECT id FROM organizations WHERE id = :id::uuid AND deleted_at IS NULL FOR ${mode === 'update' ? 'UPDATE' : 'SHARE'}`,
    { id },
  );
}

export function selectOrganizations(
  db: Db,
  principal: Principal,
  filter: { search?: string; partnerId?: string },
  page: Page,
) {
  return selectPage<OrganizationRow>(
    db,
    orgColumns,
    `organizations o WHERE o.deleted_at IS NULL AND ${orgTenantSql('o')}
       AND (:search::text IS NULL OR o.name ILIKE :search::text)
       AND (:partnerId::uuid IS NULL OR o.partner_id = :partnerId::uuid)`,
    'o.name, o.id',
    {
      ...tenantParams(principal),
      search: filter.search && likePattern(filter.search),
      partnerId: filter.partnerId ?? null,
    },
    page,
  );
}

export function updateOrganizationRow(db: Db, id: string, change: { name?: string; externalId?: string | null }) {
  return one<OrganizationRow>(
    db,
    `UPDATE organizations o SET
        name = COALESCE(:name::text, o.name),
        external_id = CASE WHEN :setExternalId::boolean THEN :externalId::text ELSE o.external_id END,
        updated_at = now()
      WHERE o.id = :id::uuid AND o.deleted_at IS NULL
      RETURNING ${orgColumns}`,
    { id, name: change.name ?? null, setExternalId: 'externalId' in change, externalId: change.externalId ?? null },
  );
}

/** Soft delete; the organization's keys and agents stop authenticating with it. */
export async function softDeleteOrganization(db: Db, id: string) {
  const { rowCount } = await db.query(
    'UPDATE organizations SET deleted_at = now(), updated_at = now() WHERE id = :id::uuid AND deleted_at IS NULL',
    { id },
  );
  return rowCount > 0;
}

// Sites

export async function insertSite(
  db: Db,
  orgId: string,
  site: { name: string; timezone?: string; address?: string },
): Promise<SiteRow> {
  const created = await one<SiteRow>(
    db,
    `INSERT INTO sites AS s (org_id, name, timezone, address) VALUES (:orgId::uuid, :name::text, :timezone::text, :address::text) RETURNING ${siteColumns}`,
    { orgId, name: site.name, timezone: site.timezone ?? null, address: site.address ?? null },
  );
  return created!;
}

export function selectSite(db: Db, orgId: string, siteId: string) {
  return one<SiteRow>(
    db,
    `SELECT ${siteColumns} FROM sites s WHERE s.id = :siteId::uuid AND s.org_id = :orgId::uuid AND s.deleted_at IS NULL`,
    { orgId, siteId },
  );
}

export function selectSites(db: Db, orgId: string, page: Page) {
  return selectPage<SiteRow>(
    db,
    siteColumns,
    'sites s WHERE s.org_id = :orgId::uuid AND s.deleted_at IS NULL',
    's.created_at, s.id',
    { orgId },
    page,
  );
}

export function updateSiteRow(
  db: Db,
  orgId: string,
  siteId: string,
  change: { name?: string; timezone?: string | null; address?: string | null },
) {
  return one<SiteRow>(
    db,
    `UPDATE sites s SET
        name = COALESCE(:name::text, s.name),
        timezone = CASE WHEN :setTimezone::boolean THEN :timezone::text ELSE s.timezone END,
        address = CASE WHEN :setAddress::boolean THEN :address::text ELSE s.address END,
        updated_at = now()
      WHERE s.id = :siteId::uuid AND s.org_id = :orgId::uuid AND s.deleted_at IS NULL
      RETURNING ${siteColumns}`,
    {
      orgId,
      siteId,
      name: change.name ?? null,
      setTimezone: 'timezone' in change,
      timezone: change.timezone ?? null,
      setAddress: 'address' in change,
      address: change.address ?? null,
    },
  );
}

/** How many live sites the organization has and how many live devices the site holds. */
export function siteUsage(db: Db, orgId: string, siteId: string) {
  return one<{ sites: number; devices: number }>(
    db,
    `SELECT (SELECT count(*) FROM sites WHERE org_id = :orgId::uuid AND deleted_at IS NULL) AS sites,
            (SELECT count(*) FROM devices WHERE site_id = :siteId::uuid AND deleted_at IS NULL) AS devices`,
    { orgId, siteId },
  );
}

/** Soft delete; the site's enrollment keys are revoked with it. */
export async function softDeleteSite(tx: Db, orgId: string, siteId: string) {
  const params = { orgId, siteId };
  const { rowCount } = await tx.query(
    'UPDATE sites SET deleted_at = now(), updated_at = now() WHERE id = :siteId::uuid AND org_id = :orgId::uuid AND deleted_at IS NULL',
    params,
  );
  await tx.query(
    'UPDATE enrollment_keys SET revoked_at = COALESCE(revoked_at, now()) WHERE site_id = :siteId::uuid AND org_id = :orgId::uuid',
    params,
  );
  return rowCount > 0;
}

// Devices

export function insertDevice(
  db: Db,
  device: {
    orgId: string;
    siteId: string;
    hostname: string;
    serialNumber?: string | null;
    osType?: string;
    osVersion?: string;
    agentVersion?: string;
    role?: string;
  },
) {
  return one<{ id: string }>(
    db,
    `INSERT INTO devices (org_id, site_id, hostname, serial_number, os_type, os_version, agent_version, role, last_seen_at)
     VALUES (:orgId::uuid, :siteId::uuid, :hostname::text, :serialNumber::text, :osType::text, :osVersion::text,
             :agentVersion::text, :role::text, now())
     RETURNING id`,
    { serialNumber: null, osType: null, osVersion: null, agentVersion: null, role: null, ...device },
  );
}

export function selectDevice(db: Db, principal: Principal, id: string) {
  return one<DeviceRow>(
    db,
    `SELECT ${deviceColumns} FROM ${deviceFrom} WHERE d.id = :id::uuid AND d.deleted_at IS NULL AND ${orgTenantSql('o')}`,
    {
      id,
      ...tenantParams(principal),
    },
  );
}

export function selectDevices(
  db: Db,
  principal: Principal,
  filter: { orgId?: string; siteId?: string; search?: string; customFields?: Record<string, string> },
  page: Page,
) {
  const customFields = customFieldFilterSql(filter.customFields ?? {});
  return selectPage<DeviceRow>(
    db,
    deviceColumns,
    `${deviceFrom} WHERE d.deleted_at IS NULL AND ${orgTenantSql('o')}
       AND (:orgId::uuid IS NULL OR d.org_id = :orgId::uuid)
       AND (:siteId::uuid IS NULL OR d.site_id = :siteId::uuid)
       AND (:search::text IS NULL OR d.hostname ILIKE :search::text OR d.display_name ILIKE :search::text)
       ${customFields.sql}`,
    'd.hostname, d.id',
    {
      ...tenantParams(principal),
      ...customFields.params,
      orgId: filter.orgId ?? null,
      siteId: filter.siteId ?? null,
      search: filter.search && likePattern(filter.search),
    },
    page,
  );
}

/** The changed device as it now reads, or undefined when it is gone. */
export function updateDeviceRow(db: Db, id: string, change: { displayName?: string | null; siteId?: string }) {
  return one<DeviceRow>(
    db,
    `WITH d AS (
       UPDATE devices d SET
          display_name = CASE WHEN :setDisplayName::boolean THEN :displayName::text ELSE d.display_name END,
          site_id = COALESCE(:siteId::uuid, d.site_id),
          updated_at = now()
        WHERE d.id = :id::uuid AND d.deleted_at IS NULL
        RETURNING d.*
     )
     SELECT ${deviceColumns} FROM d LEFT JOIN agents a ON a.device_id = d.id`,
    {
      id,
      setDisplayName: 'displayName' in change,
      displayName: change.displayName ?? null,
      siteId: change.siteId ?? null,
    },
  );
}

/** Soft delete; the device's agent token is revoked with it. */
export async function softDeleteDevice(tx: Db, id: string) {
  const { rowCount } = await tx.query(
    'UPDATE devices SET deleted_at = now(), updated_at = now() WHERE id = :id::uuid AND deleted_at IS NULL',
    { id },
  );
  await tx.query('UPDATE agents SET revoked_at = COALESCE(revoked_at, now()) WHERE device_id = :id::uuid', { id });
  return rowCount > 0;
}

// Enrollment keys and agents

const keyColumns = `k.id, k.org_id AS "orgId", k.site_id AS "siteId", k.name, k.key_prefix AS "keyPrefix",
  k.expires_at AS "expiresAt", k.revoked_at AS "revokedAt", k.max_usage AS "maxUsage", k.usage_count AS "usageCount",
  k.created_at AS "createdAt"`;

export async function insertEnrollmentKey(
  db: Db,
  key: {
    orgId: string;
    siteId: string | null;
    name: string | null;
    keyHash: string;
    keyPrefix: string;
    expiresAt: string | null;
    createdBy: string;
    maxUsage?: number;
    keySealed?: string | null;
  },
): Promise<EnrollmentKeyRow> {
  const created = await one<EnrollmentKeyRow>(
    db,
    `INSERT INTO enrollment_keys AS k (org_id, site_id, name, key_hash, key_prefix, expires_at, created_by, max_usage, key_sealed)
     VALUES (:orgId::uuid, :siteId::uuid, :name::text, :keyHash::text, :keyPrefix::text, :expiresAt::timestamptz, :createdBy::uuid,
             :maxUsage::int, :keySealed::text)
     RETURNING ${keyColumns}`,
    { ...key, maxUsage: key.maxUsage ?? 1, keySealed: key.keySealed ?? null },
  );
  return created!;
}

export function selectEnrollmentKeys(db: Db, orgId: string, page: Page) {
  return selectPage<EnrollmentKeyRow>(
    db,
    keyColumns,
    'enrollment_keys k WHERE k.org_id = :orgId::uuid',
    'k.created_at DESC, k.id',
    { orgId },
    page,
  );
}

/** Revokes a key of the organization: undefined when it has none such; `revokedNow` false when it was already. */
export function updateEnrollmentKeyRevoked(db: Db, orgId: string, keyId: string) {
  return one<{ name: string | null; keyPrefix: string; revokedNow: boolean }>(
    db,
    `WITH k AS (
       SELECT id, revoked_at IS NULL AS live FROM enrollment_keys WHERE id = :keyId::uuid AND org_id = :orgId::uuid FOR UPDATE
     )
     UPDATE enrollment_keys e SET revoked_at = COALESCE(e.revoked_at, now()) FROM k WHERE e.id = k.id
     RETURNING e.name, e.key_prefix AS "keyPrefix", k.live AS "revokedNow"`,
    { orgId, keyId },
  );
}

/** Locks FOR SHARE, as lockOrganization does, the live organization of the enrollment key with this hash. */
export function lockOrganizationOfEnrollmentKey(tx: Db, keyHash: string) {
  return one(
    tx,
    `SELECT o.id FROM enrollment_keys k JOIN organizations o ON o.id = k.org_id
      WHERE k.key_hash = :keyHash::text AND o.deleted_at IS NULL
      FOR SHARE OF o`,
    { keyHash },
  );
}

/**
 * The usable enrollment key with this hash and the live site it enrolls into: its own site
 * while that is live, or the organization's first live site for a key without a site.
 */
export function selectUsableEnrollmentKey(tx: Db, keyHash: string) {
  return one<{ keyId: string; orgId: string; siteId: string }>(
    tx,
    `SELECT k.id AS "keyId", k.org_id AS "orgId", s.id AS "siteId"
       FROM enrollment_keys k
       JOIN organizations o ON o.id = k.org_id
       JOIN LATERAL (
         SELECT s.id FROM sites s
          WHERE s.org_id = k.org_id AND s.deleted_at IS NULL AND (k.site_id IS NULL OR s.id = k.site_id)
          ORDER BY s.created_at, s.id LIMIT 1
       ) s ON true
      WHERE k.key_hash = :keyHash::text AND k.revoked_at IS NULL AND o.deleted_at IS NULL
        AND (k.expires_at IS NULL OR k.expires_at > now())`,
    { keyHash },
  );
}

/**
 * Counts one use of the key unless that would pass its cap. The UPDATE takes the key's row lock, and a concurrent
 * enrollment waiting on it re-reads the count once the first commits, so the cap holds under any concurrency.
 */
export async function claimEnrollmentKeyUse(tx: Db, keyId: string) {
  const { rowCount } = await tx.query(
    'UPDATE enrollment_keys SET usage_count = usage_count + 1 WHERE id = :keyId::uuid AND usage_count < max_usage',
    { keyId },
  );
  return rowCount > 0;
}

/** An organization's enrollment key with its sealed form, for its deployment script. */
export function selectEnrollmentKey(db: Db, orgId: string, keyId: string) {
  return one<{
    id: string;
    keySealed: string | null;
    revokedAt: Date | null;
    expiresAt: Date | null;
    name: string | null;
  }>(
    db,
    `SELECT k.id, k.key_sealed AS "keySealed", k.revoked_at AS "revokedAt", k.expires_at AS "expiresAt", k.name
       FROM enrollment_keys k WHERE k.id = :keyId::uuid AND k.org_id = :orgId::uuid`,
    { orgId, keyId },
  );
}

export function insertAgent(db: Db, deviceId: string, tokenHash: string) {
  return one<{ id: string }>(
    db,
    'INSERT INTO agents (device_id, token_hash) VALUES (:deviceId::uuid, :tokenHash::text) RETURNING id',
    { deviceId, tokenHash },
  );
}

/**
 * SQL conditions keeping the devices (alias d) holding each value of `filters` (GET /devices?cf.<key>=<value>): a
 * scalar value whose text form is the given text, or a multi-select holding it. Parameters cfKey<i>, cfValue<i>.
 */
function customFieldFilterSql(filters: Record<string, string>) {
  const entries = Object.entries(filters);
  return {
    sql: entries
      .map(
        // Two branches, each answered by its own index (0040); an OR in one WHERE would read every value.
        (_, i) => `AND d.id IN (
           SELECT v.device_id FROM device_custom_field_values v
             JOIN custom_field_definitions f ON f.id = v.field_id AND f.key = :cfKey${i}::text
            WHERE (v.value #>> '{}') = :cfValue${i}::text
           UNION ALL
           SELECT v.device_id FROM device_custom_field_values v
             JOIN custom_field_definitions f ON f.id = v.field_id AND f.key = :cfKey${i}::text
            WHERE jsonb_typeof(v.value) = 'array' AND v.value @> jsonb_build_array(:cfValue${i}::text))`,
      )
      .join('\n'),
    params: Object.fromEntries(
      entries.flatMap(([key, value], i) => [
        [`cfKey${i}`, key],
        [`cfValue${i}`, value],
      ]),
    ),
  };
}
