import { createHash } from 'node:crypto';
import { changedFields } from '../audit/changes.ts';
import { auditOwnedChange } from '../audit/partner-audit.ts';
import type { AuditContext } from '../audit/writer.ts';
import { assertOwnerEditable, type OwnedKind, writableOwner } from '../auth/owners.ts';
import type { Principal } from '../auth/principal.ts';
import { assertReachable, requirePermission } from '../auth/tenancy.ts';
import type { Db, Tx } from '../db/db.ts';
import type { Page } from '../db/page.ts';
import { NameConflict } from '../errors.ts';
import type { CreateScript, ListScriptsQuery, ScriptDefinition, ScriptParameter, UpdateScript } from './schemas.ts';
import {
  hasClearSecretDefault,
  openParameters,
  publicParameters,
  type StoredParameter,
  sealParameters,
} from './secret-defaults.ts';
import * as store from './store.ts';

/** Which library a script lives in: an organization's, or the partner's (orgId null). */
export interface Library {
  partnerId: string;
  orgId: string | null;
}

/** The script the principal reaches (404 otherwise, also another tenant's), with scripts:read. */
export async function reachableScript(db: Db, principal: Principal, id: string) {
  requirePermission(principal, 'scripts:read');
  return assertReachable(await store.selectScript(db, principal, id), 'Script');
}

/** The script with its content, parameters as stored (secret defaults sealed): for changes, never for a reply. */
export async function storedScript(db: Db, principal: Principal, id: string) {
  const script = await reachableScript(db, principal, id);
  return { ...script, content: await store.selectVersionContent(db, id, script.version) };
}

/** A script as replies show it: secret defaults write-only (`hasDefault`). */
export function scriptReply<T extends { parameters: StoredParameter[] }>(script: T): T {
  return { ...script, parameters: publicParameters(script.parameters) };
}

export async function getScript(db: Db, principal: Principal, id: string) {
  return scriptReply(await storedScript(db, principal, id));
}

export async function listScripts(db: Db, principal: Principal, query: ListScriptsQuery) {
  requirePermission(principal, 'scripts:read');
  const page = await store.selectScripts(db, principal, query, query);
  return { ...page, data: page.data.map(scriptReply) };
}

export async function listScriptVersions(db: Db, principal: Principal, id: string, page: Page) {
  await reachableScript(db, principal, id);
  const versions = await store.selectScriptVersions(db, id, page);
  const data = await Promise.all(
    versions.data.map(async (v) => scriptReply({ ...v, content: await store.selectVersionContent(db, id, v.version) })),
  );
  return { data, pagination: versions.pagination };
}

/** Seals secret defaults a script still holds in the clear (stored before they were sealed), in every version. */
export async function sealClearDefaults(db: Db, scriptId: string): Promise<void> {
  for (const set of await store.selectParameterSets(db, scriptId)) {
    const sealed = sealParameters(set.parameters);
    // Without a seal key nothing is sealed, and nothing is written.
    if (hasClearSecretDefault(set.parameters) && !hasClearSecretDefault(sealed))
      await store.updateParameterSet(db, scriptId, set.version, set.parameters, sealed);
  }
}

/**
 * The library a caller writes into: an organization it reaches with scripts:write, or its partner's
 * library, which only partner (and platform) users change.
 */
const scriptLibraries: OwnedKind = { permission: 'scripts:write', one: 'script', many: 'scripts' };
export const writableLibrary = (
  db: Db,
  principal: Principal,
  target: { availability?: 'organization' | 'partner'; orgId?: string; partnerId?: string },
): Promise<Library> => writableOwner(db, principal, target, scriptLibraries);

export async function createScript(db: Db, principal: Principal, input: CreateScript, audit: AuditContext) {
  const library = await writableLibrary(db, principal, input);
  const { availability: _a, orgId: _o, partnerId: _p, ...definition } = input;
  const created = await db.transaction(async (tx) => {
    const row = await insertScriptInto(tx, library, definition, principal.id);
    await auditScript(tx, audit, row, 'script.create', { after: scriptAuditFields(row, definition.content) });
    return row;
  });
  return scriptReply({ ...created, content: definition.content });
}

/** Inserts a script into a library; a live script of the same name is 409 NAME_CONFLICT. */
export async function insertScriptInto(db: Db, library: Library, definition: ScriptDefinition, createdBy: string) {
  if (await store.scriptNameTaken(db, library, definition.name)) throw NameConflict(definition.name);
  return store.insertScript(db, {
    ...definition,
    parameters: sealParameters(definition.parameters),
    ...library,
    createdBy: uuidOrNull(createdBy),
  });
}

export async function updateScript(
  db: Db,
  principal: Principal,
  id: string,
  change: UpdateScript,
  audit: AuditContext,
) {
  const before = await storedScript(db, principal, id);
  assertOwnerEditable(principal, before, scriptLibraries);
  const updated = await db.transaction(async (tx) => {
    const changed = await changeScript(tx, before, change, principal.id);
    await auditScript(tx, audit, changed.script, 'script.update', {
      ...changedFields(scriptAuditFields(before, before.content), scriptAuditFields(changed.script, changed.content), [
        ...auditedFields,
      ]),
      version: changed.script.version,
    });
    return changed;
  });
  return scriptReply({ ...updated.script, content: updated.content });
}

/** Applies a change; language, content or parameters that differ make a new version. */
export async function changeScript(
  db: Db,
  before: store.ScriptRow & { content: string },
  change: UpdateScript,
  changedBy: string,
) {
  if (change.name !== undefined && (await store.scriptNameTaken(db, before, change.name, before.id)))
    throw NameConflict(change.name);
  const differs = (field: 'language' | 'content') =>
    change[field] !== undefined && JSON.stringify(change[field]) !== JSON.stringify(before[field]);
  // Sealing is randomized: parameters are compared with their secret defaults opened.
  const parameters = change.parameters && sealParameters(change.parameters, before.parameters);
  const parametersDiffer =
    parameters !== undefined &&
    comparable(openParameters(parameters)) !== comparable(openParameters(before.parameters));
  const newVersion = differs('language') || differs('content') || parametersDiffer;
  const script = await store.updateScriptRow(
    db,
    before.id,
    { ...change, parameters: parametersDiffer ? parameters : undefined },
    newVersion,
    uuidOrNull(changedBy),
  );
  return { script, content: change.content ?? before.content, newVersion };
}

/** Parameters as text that ignores key order (jsonb keeps its own order, not the request's). */
const comparable = (list: ScriptParameter[]) =>
  JSON.stringify(list.map((p) => Object.fromEntries(Object.entries(p).sort(([a], [b]) => a.localeCompare(b)))));

/** Soft delete: runs and the trail keep pointing at the script. */
export async function deleteScript(db: Db, principal: Principal, id: string, audit: AuditContext) {
  const script = await reachableScript(db, principal, id);
  assertOwnerEditable(principal, script, scriptLibraries);
  await db.transaction(async (tx) => {
    await store.softDeleteScript(tx, id);
    await auditScript(tx, audit, script, 'script.delete', { version: script.version });
  });
}

const auditedFields = [
  'name',
  'description',
  'language',
  'osTypes',
  'contentSha256',
  'contentBytes',
  'parameters',
  'timeoutSeconds',
  'runAs',
  'exitCodeSeverityMapping',
  'category',
  'tags',
] as const;

/**
 * What the trail records of a script: its fields (secret defaults as `hasDefault` only), and of its content a hash
 * and size (the text may be 256 KB).
 */
export function scriptAuditFields(script: Omit<ScriptDefinition, 'content'>, content: string) {
  return {
    name: script.name,
    description: script.description,
    language: script.language,
    osTypes: script.osTypes,
    contentSha256: createHash('sha256').update(content).digest('hex'),
    contentBytes: Buffer.byteLength(content),
    parameters: publicParameters(script.parameters),
    timeoutSeconds: script.timeoutSeconds,
    runAs: script.runAs,
    exitCodeSeverityMapping: script.exitCodeSeverityMapping,
    category: script.category,
    tags: script.tags,
  };
}

/**
 * A script change goes into its organization's trail; a partner script's into every organization's of the partner;
 * in the change's transaction.
 */
export async function auditScript(
  tx: Tx,
  audit: AuditContext,
  script: { id: string; name: string; partnerId: string; orgId: string | null; version: number },
  action: string,
  details: Record<string, unknown>,
): Promise<void> {
  const event = {
    action,
    resourceType: 'script',
    resourceId: script.id,
    resourceName: script.name,
    details: { availability: script.orgId ? 'organization' : 'partner', version: script.version, ...details },
  };
  await auditOwnedChange(tx, audit, script, event);
}

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** A user's id is a UUID (JWT sub); any other actor id is not kept as the author. */
const uuidOrNull = (id: string) => (uuidPattern.test(id) ? id : null);
