import type { Principal } from '../auth/principal.ts';
import { orgTenantSql, tenantParams } from '../auth/tenancy.ts';
import { type Db, one } from '../db/db.ts';
import { type Page, selectPage } from '../db/page.ts';
import type { FieldType, FieldValue } from './schemas.ts';

const definitionColumns = `f.id, f.partner_id AS "partnerId", f.org_id AS "orgId", f.scope, f.key, f.name, f.type,
  f.choices, f.min, f.max, f.required, f.default_value AS "defaultValue", f.description, f.os_types AS "osTypes",
  f.script_writable AS "scriptWritable", f.source_system AS "sourceSystem", f.external_id AS "externalId",
  f.created_at AS "createdAt", f.updated_at AS "updatedAt"`;

export type DefinitionRecord = {
  id: string;
  partnerId: string;
  orgId: string | null;
  scope: 'device';
  key: string;
  name: string;
  type: FieldType;
  choices: string[] | null;
  min: number | null;
  max: number | null;
  required: boolean;
  defaultValue: FieldValue | null;
  description: string | null;
  osTypes: string[] | null;
  scriptWritable: boolean;
  sourceSystem: string | null;
  externalId: string | null;
  createdAt: Date;
  updatedAt: Date;
};

/** Every column a write sets. */
export type DefinitionValues = Omit<DefinitionRecord, 'id' | 'createdAt' | 'updatedAt'>;

/**
 * The definitions a principal sees: every one (platform), its partner's (partner scope), its organization's and
 * its partner's partner-wide ones (organization scope). Uses the parameters of `definitionTenantParams`.
 */
const definitionTenantSql = `(:tenantScope::text = 'platform'
  OR (:tenantScope::text = 'partner' AND f.partner_id = :tenantPartnerId::uuid)
  OR (:tenantScope::text = 'organization' AND f.partner_id = :tenantPartnerId::uuid
      AND (f.org_id IS NULL OR f.org_id = :tenantOrgId::uuid)))`;

const definitionTenantParams = (principal: Principal) => ({
  tenantScope: principal.scope,
  tenantPartnerId: principal.partnerId,
  tenantOrgId: principal.orgId,
});

/** Definition writes of one partner take turns on this transaction lock: the key rule spans its owners. */
export async function lockDefinitionsOf(tx: Db, partnerId: string) {
  await tx.query(`SELECT pg_advisory_xact_lock(hashtextextended('custom-fields:' || :partnerId::text, 0))`, {
    partnerId,
  });
}

export function selectDefinition(db: Db, principal: Principal, id: string) {
  return one<DefinitionRecord>(
    db,
    `SELECT ${definitionColumns} FROM custom_field_definitions f WHERE f.id = :id::uuid AND ${definitionTenantSql}`,
    { id, ...definitionTenantParams(principal) },
  );
}

export function selectDefinitions(
  db: Db,
  principal: Principal,
  filter: { visibleTo?: { partnerId: string; orgId: string }; key?: string },
  page: Page,
) {
  return selectPage<DefinitionRecord>(
    db,
    definitionColumns,
    `custom_field_definitions f WHERE ${definitionTenantSql}
       AND (:visiblePartnerId::uuid IS NULL
            OR (f.partner_id = :visiblePartnerId::uuid AND (f.org_id IS NULL OR f.org_id = :visibleOrgId::uuid)))
       AND (:key::text IS NULL OR f.key = :key::text)`,
    'f.key, f.org_id NULLS FIRST, f.id',
    {
      ...definitionTenantParams(principal),
      visiblePartnerId: filter.visibleTo?.partnerId ?? null,
      visibleOrgId: filter.visibleTo?.orgId ?? null,
      key: filter.key ?? null,
    },
    page,
  );
}

/**
 * The definitions devices of an organization see (its own and its partner's partner-wide ones), optionally only
 * those with one of `keys`.
 */
export async function selectVisibleDefinitions(db: Db, partnerId: string, orgId: string | null) {
  const { rows } = await db.query<DefinitionRecord>(
    `SELECT ${definitionColumns} FROM custom_field_definitions f
      WHERE f.partner_id = :partnerId::uuid AND (f.org_id IS NULL OR f.org_id = :orgId::uuid)
      ORDER BY f.key`,
    { partnerId, orgId },
  );
  return rows;
}

/**
 * The definition that already holds `key` where a definition owned by `orgId` (null: partner-wide) would collide
 * with it: the same owner's, the partner-wide one for an organization's, any organization's for a
 * partner-wide one.
 */
export function selectKeyHolder(tx: Db, partnerId: string, orgId: string | null, key: string) {
  return one<{ id: string; name: string; orgId: string | null }>(
    tx,
    `SELECT f.id, f.name, f.org_id AS "orgId" FROM custom_field_definitions f
      WHERE f.partner_id = :partnerId::uuid AND f.key = :key::text
        AND (:orgId::uuid IS NULL OR f.org_id IS NULL OR f.org_id = :orgId::uuid)
      ORDER BY f.org_id NULLS FIRST LIMIT 1`,
    { partnerId, orgId, key },
  );
}

const definitionParams = (values: DefinitionValues) => ({
  ...values,
  choices: values.choices && JSON.stringify(values.choices),
  defaultValue: values.defaultValue === null ? null : JSON.stringify(values.defaultValue),
  osTypes: values.osTypes && JSON.stringify(values.osTypes),
});

export async function insertDefinition(tx: Db, values: DefinitionValues) {
  const created = await one<DefinitionRecord>(
    tx,
    `INSERT INTO custom_field_definitions AS f (partner_id, org_id, scope, key, name, type, choices, min, max, required,
       default_value, description, os_types, script_writable, source_system, external_id)
     VALUES (:partnerId::uuid, :orgId::uuid, :scope::text, :key::text, :name::text, :type::text, :choices::jsonb,
       :min::float8, :max::float8, :required::boolean, :defaultValue::jsonb, :description::text, :osTypes::jsonb,
       :scriptWritable::boolean, :sourceSystem::text, :externalId::text)
     RETURNING ${definitionColumns}`,
    definitionParams(values),
  );
  return created!;
}

export async function updateDefinition(tx: Db, id: string, values: DefinitionValues) {
  const updated = await one<DefinitionRecord>(
    tx,
    `UPDATE custom_field_definitions f SET name = :name::text, type = :type::text, choices = :choices::jsonb,
        min = :min::float8, max = :max::float8, required = :required::boolean, default_value = :defaultValue::jsonb,
        description = :description::text, os_types = :osTypes::jsonb, script_writable = :scriptWritable::boolean,
        updated_at = now()
      WHERE f.id = :id::uuid
      RETURNING ${definitionColumns}`,
    { id, ...definitionParams(values) },
  );
  return updated!;
}

/** How many values the definition holds, per organization of the devices holding them. */
export async function countValuesByOrg(db: Db, fieldId: string) {
  const { rows } = await db.query<{ orgId: string; values: number }>(
    `SELECT d.org_id AS "orgId", count(*)::int AS values FROM device_custom_field_values v
       JOIN devices d ON d.id = v.device_id WHERE v.field_id = :fieldId::uuid GROUP BY d.org_id`,
    { fieldId },
  );
  return rows;
}

/** Deletes the definition with its values; how many values went. */
/** Deletes a definition with its values: how many values went with it, or undefined when it was gone already. */
export async function deleteDefinition(tx: Db, id: string): Promise<number | undefined> {
  const row = await one<{ values: number; deleted: boolean }>(
    tx,
    `WITH v AS (DELETE FROM device_custom_field_values WHERE field_id = :id::uuid RETURNING 1),
          f AS (DELETE FROM custom_field_definitions WHERE id = :id::uuid AND (SELECT count(*) FROM v) >= 0 RETURNING 1)
     SELECT (SELECT count(*) FROM v)::int AS values, EXISTS (SELECT 1 FROM f) AS deleted`,
    { id },
  );
  return row!.deleted ? row!.values : undefined;
}

/** The live organizations of a partner: a partner-wide definition's audit rows go to each. */
export async function selectPartnerOrganizations(db: Db, partnerId: string) {
  const { rows } = await db.query<{ id: string; name: string }>(
    'SELECT id, name FROM organizations WHERE partner_id = :partnerId::uuid AND deleted_at IS NULL ORDER BY id',
    { partnerId },
  );
  return rows;
}

/** What a value write needs of its device: its organization, partner and operating system. */
export type ValueTarget = {
  id: string;
  orgId: string;
  partnerId: string;
  hostname: string;
  displayName: string | null;
  osType: string | null;
};

export function selectValueTarget(db: Db, deviceId: string) {
  return one<ValueTarget>(
    db,
    `SELECT d.id, d.org_id AS "orgId", o.partner_id AS "partnerId", d.hostname, d.display_name AS "displayName",
            d.os_type AS "osType"
       FROM devices d JOIN organizations o ON o.id = d.org_id
      WHERE d.id = :deviceId::uuid AND d.deleted_at IS NULL`,
    { deviceId },
  );
}

/** The definition with `key` that devices of the organization see (one at most: the key rule). */
export function selectVisibleDefinition(db: Db, partnerId: string, orgId: string, key: string) {
  return one<DefinitionRecord>(
    db,
    `SELECT ${definitionColumns} FROM custom_field_definitions f
      WHERE f.partner_id = :partnerId::uuid AND (f.org_id IS NULL OR f.org_id = :orgId::uuid) AND f.key = :key::text`,
    { partnerId, orgId, key },
  );
}

/** The stored values of the devices, with their definition's key and type. */
export async function selectDeviceValues(db: Db, deviceIds: string[]) {
  const { rows } = await db.query<{
    deviceId: string;
    fieldId: string;
    key: string;
    type: FieldType;
    value: FieldValue;
  }>(
    `SELECT v.device_id AS "deviceId", v.field_id AS "fieldId", f.key, f.type, v.value
       FROM device_custom_field_values v JOIN custom_field_definitions f ON f.id = v.field_id
      WHERE v.device_id IN (SELECT value::uuid FROM jsonb_array_elements_text(:deviceIds::jsonb))
      ORDER BY f.key`,
    { deviceIds: JSON.stringify(deviceIds) },
  );
  return rows;
}

export type ValueWrite = { deviceId: string; fieldId: string; value: FieldValue };

/**
 * Stores values in one statement (a batch travels as one JSON parameter); a value equal to the stored one is not
 * rewritten. Returns the rows written with the value each replaced (null: none was stored).
 */
export async function upsertValues(tx: Db, values: ValueWrite[]) {
  const { rows } = await tx.query<{ deviceId: string; fieldId: string; before: FieldValue | null }>(
    `WITH input AS (
       SELECT * FROM jsonb_to_recordset(:values::jsonb) AS r("deviceId" uuid, "fieldId" uuid, value jsonb)
     ), old AS (
       SELECT v.device_id, v.field_id, v.value FROM device_custom_field_values v
         JOIN input i ON v.device_id = i."deviceId" AND v.field_id = i."fieldId"
     ), written AS (
       INSERT INTO device_custom_field_values AS v (device_id, field_id, value)
       SELECT "deviceId", "fieldId", value FROM input
       ON CONFLICT (device_id, field_id) DO UPDATE SET value = excluded.value, updated_at = now()
        WHERE v.value IS DISTINCT FROM excluded.value
       RETURNING v.device_id, v.field_id
     )
     SELECT w.device_id AS "deviceId", w.field_id AS "fieldId", o.value AS before
       FROM written w LEFT JOIN old o ON o.device_id = w.device_id AND o.field_id = w.field_id`,
    { values: JSON.stringify(values) },
  );
  return rows;
}

/** Deletes a device's value; the value it held, if any. */
export function deleteValue(tx: Db, deviceId: string, fieldId: string) {
  return one<{ before: FieldValue }>(
    tx,
    `DELETE FROM device_custom_field_values WHERE device_id = :deviceId::uuid AND field_id = :fieldId::uuid
     RETURNING value AS before`,
    { deviceId, fieldId },
  );
}

/** Every definition of the partner (partner-wide and each organization's): an import resolves keys per device. */
export async function selectPartnerDefinitions(db: Db, partnerId: string) {
  const { rows } = await db.query<DefinitionRecord>(
    `SELECT ${definitionColumns} FROM custom_field_definitions f WHERE f.partner_id = :partnerId::uuid ORDER BY f.key`,
    { partnerId },
  );
  return rows;
}

/** The live devices of the partner's live organizations, as an import resolves its rows to them. */
export async function selectImportDevices(db: Db, partnerId: string) {
  const { rows } = await db.query<ValueTarget & { serialNumber: string | null }>(
    `SELECT d.id, d.org_id AS "orgId", o.partner_id AS "partnerId", d.hostname, d.display_name AS "displayName",
            d.os_type AS "osType", d.serial_number AS "serialNumber"
       FROM devices d JOIN organizations o ON o.id = d.org_id AND o.deleted_at IS NULL
      WHERE o.partner_id = :partnerId::uuid AND d.deleted_at IS NULL`,
    { partnerId },
  );
  return rows;
}

/** The other RMM's device ids mapped to devices by earlier imports. */
export async function selectDeviceMappings(db: Db, partnerId: string, sourceSystem: string) {
  const { rows } = await db.query<{ externalId: string; deviceId: string }>(
    `SELECT external_id AS "externalId", device_id AS "deviceId" FROM custom_field_device_mappings
      WHERE partner_id = :partnerId::uuid AND source_system = :sourceSystem::text`,
    { partnerId, sourceSystem },
  );
  return rows;
}

export async function upsertDeviceMappings(
  tx: Db,
  partnerId: string,
  sourceSystem: string,
  mappings: { externalId: string; deviceId: string }[],
) {
  await tx.query(
    `INSERT INTO custom_field_device_mappings (partner_id, source_system, external_id, device_id)
     SELECT :partnerId::uuid, :sourceSystem::text, r."externalId", r."deviceId"
       FROM jsonb_to_recordset(:mappings::jsonb) AS r("externalId" text, "deviceId" uuid)
     ON CONFLICT (partner_id, source_system, external_id) DO UPDATE SET device_id = excluded.device_id`,
    { partnerId, sourceSystem, mappings: JSON.stringify(mappings) },
  );
}

/**
 * The organization whose trail holds an import pass's one summary row (an audit row belongs to one organization):
 * the one the import names, else the partner's oldest live organization.
 */
export function selectSummaryOrganization(db: Db, partnerId: string, orgId: string | undefined) {
  return one<{ id: string; name: string }>(
    db,
    `SELECT id, name FROM organizations
      WHERE partner_id = :partnerId::uuid AND (:orgId::uuid IS NULL OR id = :orgId::uuid) AND deleted_at IS NULL
      ORDER BY created_at, id LIMIT 1`,
    { partnerId, orgId: orgId ?? null },
  );
}

/** One request's share of a values import pass. */
/** A part of a pass: claimed before its values are written (`done` false), `set` counted with each chunk written. */
export type PassPart = { rows: number; sha256: string; set: number; summary: Record<string, number>; done?: boolean };
export type PassRecord = {
  id: string;
  partnerId: string;
  orgId: string | null;
  sourceSystem: string;
  fileName: string | null;
  fileSha256: string;
  fileRows: number;
  parts: Record<string, PassPart>;
  closedAt: Date | null;
};

const passColumns = `id, partner_id AS "partnerId", org_id AS "orgId", source_system AS "sourceSystem",
  file_name AS "fileName", file_sha256 AS "fileSha256", file_rows AS "fileRows", parts, closed_at AS "closedAt"`;

/** The pass, opened by its first request, locked for this transaction. */
export async function lockPass(tx: Db, pass: Omit<PassRecord, 'parts' | 'closedAt'>): Promise<PassRecord> {
  await tx.query(
    `INSERT INTO custom_field_import_passes (id, partner_id, org_id, source_system, file_name, file_sha256, file_rows)
     VALUES (:id::uuid, :partnerId::uuid, :orgId::uuid, :sourceSystem::text, :fileName::text, :fileSha256::text,
             :fileRows::int)
     ON CONFLICT (id) DO NOTHING`,
    pass,
  );
  const locked = await one<PassRecord>(
    tx,
    `SELECT ${passColumns} FROM custom_field_import_passes WHERE id = :id::uuid FOR UPDATE`,
    { id: pass.id },
  );
  return locked!;
}

export async function updatePass(tx: Db, id: string, parts: Record<string, PassPart>, close: boolean) {
  await tx.query(
    `UPDATE custom_field_import_passes
        SET parts = :parts::jsonb, closed_at = CASE WHEN :close::boolean THEN now() ELSE closed_at END
      WHERE id = :id::uuid`,
    { id, parts: JSON.stringify(parts), close },
  );
}

/** Counts values a part wrote, in the transaction that wrote them: a part cut short keeps what it did write. */
export async function addPartSet(tx: Db, id: string, firstRow: number, written: number) {
  await tx.query(
    `UPDATE custom_field_import_passes
        SET parts = jsonb_set(parts, ARRAY[:key::text, 'set'],
                              to_jsonb(COALESCE((parts #>> ARRAY[:key::text, 'set'])::int, 0) + :written::int))
      WHERE id = :id::uuid`,
    { id, key: String(firstRow), written },
  );
}

/** The live devices among `deviceIds` that the principal reaches, as value writes need them. */
export async function selectReachableValueTargets(db: Db, principal: Principal, deviceIds: string[]) {
  const { rows } = await db.query<ValueTarget>(
    `SELECT d.id, d.org_id AS "orgId", o.partner_id AS "partnerId", d.hostname, d.display_name AS "displayName",
            d.os_type AS "osType"
       FROM devices d JOIN organizations o ON o.id = d.org_id
      WHERE d.id IN (SELECT value::uuid FROM jsonb_array_elements_text(:deviceIds::jsonb))
        AND d.deleted_at IS NULL AND ${orgTenantSql('o')}`,
    { deviceIds: JSON.stringify(deviceIds), ...tenantParams(principal) },
  );
  return rows;
}

/** Deletes one field's values of the devices; the values deleted. */
export async function deleteValues(tx: Db, fieldId: string, deviceIds: string[]) {
  const { rows } = await tx.query<{ deviceId: string; before: FieldValue }>(
    `DELETE FROM device_custom_field_values
      WHERE field_id = :fieldId::uuid
        AND device_id IN (SELECT value::uuid FROM jsonb_array_elements_text(:deviceIds::jsonb))
     RETURNING device_id AS "deviceId", value AS before`,
    { fieldId, deviceIds: JSON.stringify(deviceIds) },
  );
  return rows;
}
