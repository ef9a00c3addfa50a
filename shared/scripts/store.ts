import type { Principal } from '../auth/principal.ts';
import { tenantParams } from '../auth/tenancy.ts';
import { type Db, one } from '../db/db.ts';
import { type Page, selectPage } from '../db/page.ts';
import type { ScriptDefinition, ScriptParameter, UpdateScript } from './schemas.ts';

export interface ScriptRow {
  id: string;
  partnerId: string;
  orgId: string | null;
  availability: 'organization' | 'partner';
  name: string;
  description: string;
  language: ScriptDefinition['language'];
  osTypes: ScriptDefinition['osTypes'];
  parameters: ScriptParameter[];
  timeoutSeconds: number;
  runAs: ScriptDefinition['runAs'];
  exitCodeSeverityMapping: ScriptDefinition['exitCodeSeverityMapping'];
  category: string | null;
  tags: string[];
  version: number;
  createdAt: Date;
  updatedAt: Date;
}

const scriptColumns = `s.id, s.partner_id AS "partnerId", s.org_id AS "orgId",
  CASE WHEN s.org_id IS NULL THEN 'partner' ELSE 'organization' END AS availability,
  s.name, s.description, s.language, s.os_types AS "osTypes", s.parameters, s.timeout_seconds AS "timeoutSeconds",
  s.run_as AS "runAs", s.exit_code_severity_mapping AS "exitCodeSeverityMapping", s.category, s.tags, s.version,
  s.created_at AS "createdAt", s.updated_at AS "updatedAt"`;

/**
 * The scripts a principal reaches: every one for the platform, the partner's own and its organizations' for a
 * partner user, and for an organization's caller its organization's plus the partner scripts (issue 17: one copy
 * serves every organization of the partner). An organization's script leaves with its organization.
 */
const scriptTenantSql = `(:tenantScope::text = 'platform'
    OR (:tenantScope::text = 'partner' AND s.partner_id = :tenantPartnerId::uuid)
    OR (:tenantScope::text = 'organization' AND s.partner_id = :tenantPartnerId::uuid
        AND (s.org_id IS NULL OR s.org_id = :tenantOrgId::uuid)))
  AND (s.org_id IS NULL OR EXISTS (SELECT 1 FROM organizations o WHERE o.id = s.org_id AND o.deleted_at IS NULL))`;

export function selectScript(db: Db, principal: Principal, id: string) {
  return one<ScriptRow & Record<string, unknown>>(
    db,
    `SELECT ${scriptColumns} FROM scripts s WHERE s.id = :id::uuid AND s.deleted_at IS NULL AND ${scriptTenantSql}`,
    { id, ...tenantParams(principal) },
  );
}

export function selectScripts(
  db: Db,
  principal: Principal,
  filter: { orgId?: string; availability?: string; language?: string; category?: string; search?: string },
  page: Page,
) {
  return selectPage<ScriptRow>(
    db,
    scriptColumns,
    `scripts s WHERE s.deleted_at IS NULL AND ${scriptTenantSql}
       AND (:orgId::uuid IS NULL OR s.org_id = :orgId::uuid
            OR (s.org_id IS NULL AND s.partner_id = (SELECT partner_id FROM organizations WHERE id = :orgId::uuid)))
       AND (:availability::text IS NULL OR (s.org_id IS NULL) = (:availability::text = 'partner'))
       AND (:language::text IS NULL OR s.language = :language::text)
       AND (:category::text IS NULL OR lower(s.category) = lower(:category::text))
       AND (:search::text IS NULL OR s.name ILIKE :search::text)`,
    'lower(s.name), s.id',
    {
      ...tenantParams(principal),
      orgId: filter.orgId ?? null,
      availability: filter.availability ?? null,
      language: filter.language ?? null,
      category: filter.category ?? null,
      search: filter.search ?? null,
    },
    page,
  );
}

/** The live scripts of one library (an organization's, or the partner's when orgId is null) with these names. */
export async function selectScriptsByName(
  db: Db,
  library: { partnerId: string; orgId: string | null },
  names: string[],
): Promise<{ id: string; name: string; version: number }[]> {
  const { rows } = await db.query<{ id: string; name: string; version: number }>(
    `SELECT s.id, s.name, s.version FROM scripts s
      WHERE s.partner_id = :partnerId::uuid AND s.org_id IS NOT DISTINCT FROM :orgId::uuid AND s.deleted_at IS NULL
        AND lower(s.name) IN (SELECT lower(n) FROM jsonb_array_elements_text(:names::jsonb) AS n)`,
    { ...library, names },
  );
  return rows;
}

/** Whether a live script of this name exists in the library (other than `exceptId`). */
export async function scriptNameTaken(
  db: Db,
  library: { partnerId: string; orgId: string | null },
  name: string,
  exceptId: string | null = null,
): Promise<boolean> {
  const row = await one(
    db,
    `SELECT 1 AS taken FROM scripts s
      WHERE s.partner_id = :partnerId::uuid AND s.org_id IS NOT DISTINCT FROM :orgId::uuid AND s.deleted_at IS NULL
        AND lower(s.name) = lower(:name::text) AND s.id IS DISTINCT FROM :exceptId::uuid`,
    { ...library, name, exceptId },
  );
  return row !== undefined;
}

/** A new script at version 1, and that version. */
export async function insertScript(
  db: Db,
  script: ScriptDefinition & { partnerId: string; orgId: string | null; createdBy: string | null },
): Promise<ScriptRow> {
  const row = await one<ScriptRow & Record<string, unknown>>(
    db,
    `WITH s AS (
       INSERT INTO scripts (partner_id, org_id, name, description, language, os_types, category, tags, run_as,
                            timeout_seconds, exit_code_severity_mapping, content, parameters, created_by)
       VALUES (:partnerId::uuid, :orgId::uuid, :name::text, :description::text, :language::text, :osTypes::jsonb,
               :category::text, :tags::jsonb, :runAs::text, :timeoutSeconds::int, :mapping::jsonb, :content::text,
               :parameters::jsonb, :createdBy::uuid)
       RETURNING *),
     v AS (
       INSERT INTO script_versions (script_id, version, language, content, parameters, created_by)
       SELECT id, 1, language, content, parameters, created_by FROM s)
     SELECT ${scriptColumns} FROM s`,
    {
      partnerId: script.partnerId,
      orgId: script.orgId,
      name: script.name,
      description: script.description,
      language: script.language,
      osTypes: script.osTypes,
      category: script.category,
      tags: script.tags,
      runAs: script.runAs,
      timeoutSeconds: script.timeoutSeconds,
      mapping: script.exitCodeSeverityMapping,
      content: script.content,
      parameters: script.parameters,
      createdBy: script.createdBy,
    },
  );
  return row!;
}

/**
 * Changes a script; a change of language, content or parameters makes the next version (issue 17: runs record the
 * version they ran). Undefined fields stay as they are.
 */
export async function updateScriptRow(
  db: Db,
  id: string,
  change: UpdateScript,
  newVersion: boolean,
  changedBy: string | null,
): Promise<ScriptRow> {
  const row = await one<ScriptRow & Record<string, unknown>>(
    db,
    `WITH s AS (
       UPDATE scripts SET
         name = coalesce(:name::text, name),
         description = coalesce(:description::text, description),
         language = coalesce(:language::text, language),
         os_types = coalesce(:osTypes::jsonb, os_types),
         content = coalesce(:content::text, content),
         parameters = coalesce(:parameters::jsonb, parameters),
         timeout_seconds = coalesce(:timeoutSeconds::int, timeout_seconds),
         run_as = coalesce(:runAs::text, run_as),
         exit_code_severity_mapping = CASE WHEN :setMapping::boolean THEN :mapping::jsonb ELSE exit_code_severity_mapping END,
         category = CASE WHEN :setCategory::boolean THEN :category::text ELSE category END,
         tags = coalesce(:tags::jsonb, tags),
         version = version + CASE WHEN :newVersion::boolean THEN 1 ELSE 0 END,
         updated_at = now()
       WHERE id = :id::uuid AND deleted_at IS NULL
       RETURNING *),
     v AS (
       INSERT INTO script_versions (script_id, version, language, content, parameters, created_by)
       SELECT id, version, language, content, parameters, :changedBy::uuid FROM s WHERE :newVersion::boolean)
     SELECT ${scriptColumns} FROM s`,
    {
      id,
      name: change.name,
      description: change.description,
      language: change.language,
      osTypes: change.osTypes,
      content: change.content,
      parameters: change.parameters,
      timeoutSeconds: change.timeoutSeconds,
      runAs: change.runAs,
      setMapping: change.exitCodeSeverityMapping !== undefined,
      mapping: change.exitCodeSeverityMapping ?? null,
      setCategory: change.category !== undefined,
      category: change.category ?? null,
      tags: change.tags,
      newVersion,
      changedBy,
    },
  );
  return row!;
}

export async function softDeleteScript(db: Db, id: string): Promise<void> {
  await db.query('UPDATE scripts SET deleted_at = now() WHERE id = :id::uuid AND deleted_at IS NULL', { id });
}

export interface VersionRow {
  version: number;
  language: ScriptDefinition['language'];
  parameters: ScriptParameter[];
  createdBy: string | null;
  createdAt: Date;
}

export function selectScriptVersions(db: Db, scriptId: string, page: Page) {
  return selectPage<VersionRow>(
    db,
    `v.version, v.language, v.parameters, v.created_by AS "createdBy", v.created_at AS "createdAt"`,
    'script_versions v WHERE v.script_id = :scriptId::uuid',
    'v.version DESC',
    { scriptId },
    page,
  );
}

/**
 * The Data API returns at most 64 KB per row and 1 MiB per call: a version's content (up to 256 KB) is read in
 * slices of 8,000 characters (at most 32 KB of UTF-8), 24 slices a call.
 */
const sliceChars = 8_000;
const slicesPerRead = 24;

export async function selectVersionContent(db: Db, scriptId: string, version: number): Promise<string> {
  let text = '';
  let after = 0;
  for (;;) {
    const { rows } = await db.query<{ at: number; part: string }>(
      `SELECT s.at, substr(v.content, s.at, ${sliceChars}) AS part
         FROM script_versions v
        CROSS JOIN LATERAL generate_series(1, greatest(length(v.content), 1), ${sliceChars}) AS s (at)
        WHERE v.script_id = :scriptId::uuid AND v.version = :version::int AND s.at > :after::int
        ORDER BY s.at
        LIMIT ${slicesPerRead}`,
      { scriptId, version, after },
    );
    for (const row of rows) text += row.part;
    if (rows.length < slicesPerRead) return text;
    after = rows[rows.length - 1]!.at;
  }
}

/** The live organizations of a partner: a partner script's changes go into each one's trail. */
export async function selectPartnerOrgIds(db: Db, partnerId: string): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    'SELECT id FROM organizations WHERE partner_id = :partnerId::uuid AND deleted_at IS NULL ORDER BY id',
    { partnerId },
  );
  return rows.map((row) => row.id);
}
