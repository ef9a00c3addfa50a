import type { z } from 'zod';
import { changedFields } from '../audit/changes.ts';
import { type AuditContext, auditChange } from '../audit/writer.ts';
import type { Permission } from '../auth/permissions.ts';
import type { Principal } from '../auth/principal.ts';
import { reachableOrganization } from '../auth/reachable-organization.ts';
import { assertReachable, requirePermission } from '../auth/tenancy.ts';
import type { Db, Tx } from '../db/db.ts';
import type { Page } from '../db/page.ts';
import { Conflict, Forbidden, NotFound, ValidationFailed } from '../errors.ts';
import type { createDefinition as createSchema, updateDefinition as updateSchema } from './schemas.ts';
import type { DefinitionRecord, DefinitionValues } from './store.ts';
import * as store from './store.ts';
import { checkValue } from './value.ts';

/** Definitions are read with devices:read and written with devices:write, as the values they describe. */
export const fieldsRead: Permission = 'devices:read';
export const fieldsWrite: Permission = 'devices:write';

const auditedFields = [
  'key',
  'name',
  'type',
  'choices',
  'min',
  'max',
  'required',
  'defaultValue',
  'description',
  'osTypes',
  'scriptWritable',
  'sourceSystem',
  'externalId',
] as const;
export const snapshot = (field: DefinitionRecord) =>
  Object.fromEntries(auditedFields.map((name) => [name, field[name]]));

/**
 * A definition's audit rows: on its organization, or for a partner-wide one on every organization of the partner,
 * since each sees it (audit rows belong to an organization). Written in the transaction of the change (`tx`).
 */
export async function auditDefinition(
  tx: Tx,
  audit: AuditContext,
  field: DefinitionRecord,
  action: string,
  details: (orgId: string) => Record<string, unknown>,
) {
  const orgs = field.orgId ? [{ id: field.orgId }] : await store.selectPartnerOrganizations(tx, field.partnerId);
  await auditChange(
    tx,
    audit,
    orgs.map((org) => ({
      orgId: org.id,
      action,
      resourceType: 'custom_field',
      resourceId: field.id,
      resourceName: field.key,
      details: { partnerWide: field.orgId === null, ...details(org.id) },
    })),
  );
}

const invalid = (field: string, message: string) =>
  ValidationFailed(`Invalid ${field}`, [{ path: `body.${field}`, message, code: 'custom' }]);

/** A definition is consistent in itself: choices only (and always) for choice types, min ≤ max, a valid default. */
export function checkDefinition(values: DefinitionValues) {
  const choiceType = values.type === 'dropdown' || values.type === 'multi-select';
  if (choiceType && !values.choices) throw invalid('choices', `A ${values.type} field needs its choices`);
  if (!choiceType && values.choices) throw invalid('choices', 'Only dropdown and multi-select fields have choices');
  if (values.type !== 'number' && (values.min !== null || values.max !== null))
    throw invalid(values.min !== null ? 'min' : 'max', 'Only number fields have a minimum and maximum');
  if (values.min !== null && values.max !== null && values.min > values.max)
    throw invalid('max', 'The maximum is below the minimum');
  if (values.defaultValue !== null) {
    const checked = checkValue(values, values.defaultValue);
    if (checked.reason) throw invalid('defaultValue', checked.reason);
  }
}

/** Inside the partner's lock: no definition visible to the same devices holds the key (409 naming it). */
async function checkKey(tx: Db, values: Pick<DefinitionValues, 'partnerId' | 'orgId' | 'key'>) {
  const holder = await store.selectKeyHolder(tx, values.partnerId, values.orgId, values.key);
  if (holder)
    throw Conflict(
      `The key ${values.key} is taken by the ${holder.orgId ? 'organization' : 'partner-wide'} custom field "${holder.name}" (${holder.id})`,
    );
}

/**
 * Who may write a definition of this owner: partner-wide ones only partner and platform users, an
 * organization's whoever reaches the organization; both with devices:write.
 */
async function ownerOf(db: Db, principal: Principal, input: { orgId?: string | null; partnerId?: string }) {
  if (input.orgId) {
    const org = await reachableOrganization(db, principal, input.orgId, fieldsWrite);
    return { partnerId: org.partnerId, orgId: org.id };
  }
  requirePermission(principal, fieldsWrite);
  if (principal.scope === 'organization')
    throw Forbidden('Only partner users create and change partner-wide custom fields; name orgId');
  if (principal.scope === 'partner') {
    if (input.partnerId && input.partnerId !== principal.partnerId) throw NotFound('Partner');
    return { partnerId: principal.partnerId!, orgId: null };
  }
  if (!input.partnerId) throw invalid('partnerId', 'Platform administrators name the partner of a partner-wide field');
  return { partnerId: input.partnerId, orgId: null };
}

export async function reachableDefinition(db: Db, principal: Principal, id: string, permission: Permission) {
  const field = assertReachable(await store.selectDefinition(db, principal, id), 'Custom field');
  requirePermission(principal, permission);
  return field;
}

export async function listDefinitions(db: Db, principal: Principal, query: Page & { orgId?: string; key?: string }) {
  requirePermission(principal, fieldsRead);
  const visibleTo = query.orgId
    ? await reachableOrganization(db, principal, query.orgId, fieldsRead).then((org) => ({
        partnerId: org.partnerId,
        orgId: org.id,
      }))
    : undefined;
  return store.selectDefinitions(db, principal, { visibleTo, key: query.key }, query);
}

export const getDefinition = (db: Db, principal: Principal, id: string) =>
  reachableDefinition(db, principal, id, fieldsRead);

/** Every path that creates a definition (the API, the import wizard) goes through here, inside the partner's lock. */
export async function insertCheckedDefinition(tx: Db, values: DefinitionValues) {
  checkDefinition(values);
  await checkKey(tx, values);
  return store.insertDefinition(tx, values);
}

export const definitionValues = (
  owner: { partnerId: string; orgId: string | null },
  input: z.output<typeof createSchema>,
): DefinitionValues => ({
  ...owner,
  scope: input.scope,
  key: input.key,
  name: input.name,
  type: input.type,
  choices: input.choices ?? null,
  min: input.min ?? null,
  max: input.max ?? null,
  required: input.required,
  defaultValue: input.defaultValue ?? null,
  description: input.description ?? null,
  osTypes: input.osTypes ?? null,
  scriptWritable: input.scriptWritable,
  sourceSystem: input.sourceSystem ?? null,
  externalId: input.externalId ?? null,
});

/** Audited as custom_field.create with the definition's fields. */
export async function createDefinition(
  db: Db,
  principal: Principal,
  input: z.output<typeof createSchema>,
  audit: AuditContext,
) {
  if ((input.sourceSystem === undefined) !== (input.externalId === undefined))
    throw invalid('externalId', 'externalId and sourceSystem go together');
  const owner = await ownerOf(db, principal, input);
  return db.transaction(async (tx) => {
    await store.lockDefinitionsOf(tx, owner.partnerId);
    const created = await insertCheckedDefinition(tx, definitionValues(owner, input));
    await auditDefinition(tx, audit, created, 'custom_field.create', () => ({ after: snapshot(created) }));
    return created;
  });
}

/**
 * Audited as custom_field.update with the changed fields. A type change is refused (409) while values exist: a
 * converted value would be a coerced one; delete the values (or the definition, with force) first.
 */
export async function updateDefinition(
  db: Db,
  principal: Principal,
  id: string,
  change: z.output<typeof updateSchema>,
  audit: AuditContext,
) {
  const before = await reachableDefinition(db, principal, id, fieldsWrite);
  await ownerOf(db, principal, before);
  return db.transaction(async (tx) => {
    await store.lockDefinitionsOf(tx, before.partnerId);
    const current = assertReachable(await store.selectDefinition(tx, principal, id), 'Custom field');
    if (change.type && change.type !== current.type) {
      const counts = await store.countValuesByOrg(tx, id);
      const values = counts.reduce((sum, count) => sum + count.values, 0);
      if (values > 0)
        throw Conflict(
          `The field holds ${values} values: its type cannot change while values exist; delete them first`,
        );
    }
    const values: DefinitionValues = { ...current, ...change } as DefinitionValues;
    checkDefinition(values);
    const after = await store.updateDefinition(tx, id, values);
    await auditDefinition(tx, audit, after, 'custom_field.update', () =>
      changedFields(snapshot(before), snapshot(after), auditedFields),
    );
    return after;
  });
}

/**
 * Deletes a definition; with values it needs force (409 otherwise) and they go with it. Audited as
 * custom_field.delete with the definition and the count of values removed (in that organization, and in all).
 */
export async function deleteDefinition(db: Db, principal: Principal, id: string, force: boolean, audit: AuditContext) {
  const field = await reachableDefinition(db, principal, id, fieldsWrite);
  await ownerOf(db, principal, field);
  await db.transaction(async (tx) => {
    await store.lockDefinitionsOf(tx, field.partnerId);
    const counts = await store.countValuesByOrg(tx, id);
    const total = counts.reduce((sum, count) => sum + count.values, 0);
    if (total > 0 && !force)
      throw Conflict(`The field holds ${total} values; delete with ?force=true to remove them with it`);
    const removed = await store.deleteDefinition(tx, id);
    // Deleted meanwhile by another request, which audited it.
    if (removed === undefined) throw NotFound('Custom field');
    await auditDefinition(tx, audit, field, 'custom_field.delete', (orgId) => ({
      before: snapshot(field),
      valuesRemoved: counts.find((count) => count.orgId === orgId)?.values ?? 0,
      valuesRemovedInAll: removed,
    }));
  });
}
