import { changedFields } from '../audit/changes.ts';
import type { AuditContext } from '../audit/writer.ts';
import { sealSecret } from '../auth/key-seal.ts';
import { assertOwnerEditable, type OwnedKind, writableOwner } from '../auth/owners.ts';
import type { Principal } from '../auth/principal.ts';
import { assertReachable, requirePermission } from '../auth/tenancy.ts';
import { type Db, one } from '../db/db.ts';
import type { Page } from '../db/page.ts';
import { DomainError, NotFound, ValidationFailed } from '../errors.ts';
import { selectUnknownChannelIds } from '../notifications/store.ts';
import { compileOrRefuse } from '../schedules/preview.ts';
import { resolveParameters } from '../scripts/parameters.ts';
import type { ScriptParameter } from '../scripts/schemas.ts';
import { openParameters, type StoredParameter } from '../scripts/secret-defaults.ts';
import { armAutomation } from './schedule.ts';
import { type Action, type CreateAutomation, defaultGuards, type Trigger, type UpdateAutomation } from './schemas.ts';
import * as store from './store.ts';
import { actorOf, auditAutomation, publicAction, webhookPath } from './stored.ts';

const invalid = (path: string, message: string) =>
  ValidationFailed(message, [{ path: `body.${path}`, message, code: 'custom' }]);

/** An automation as answered. */
export function reply(row: store.AutomationRow) {
  const { hasWebhookSecret, createdBy: _, ...automation } = row;
  const hook = row.triggers.some((t) => t.type === 'webhook');
  return {
    ...automation,
    actions: row.actions.map(publicAction),
    webhook: hook ? { url: webhookPath(row.id), hasSecret: hasWebhookSecret } : null,
  };
}

/** Who owns a new automation: an organization the caller reaches, or its partner (partner and platform callers). */
async function ownerOf(db: Db, principal: Principal, input: CreateAutomation): Promise<store.Owner> {
  requirePermission(principal, 'scripts:write');
  if (input.partnerId && principal.scope !== 'platform')
    throw invalid('partnerId', 'Only platform callers give partnerId');
  return writableOwner(
    db,
    principal,
    { ...input, availability: input.orgId ? 'organization' : 'partner' },
    automations,
  );
}

const automations: OwnedKind = { permission: 'scripts:write', one: 'automation', many: 'automations' };

/** A live script the owner's automations can run: the partner's library, or the owner organization's own. */
function selectOwnerScript(db: Db, owner: store.Owner, scriptId: string) {
  return one<{ parameters: StoredParameter[] }>(
    db,
    `SELECT parameters FROM scripts WHERE id = :scriptId::uuid AND partner_id = :partnerId::uuid
        AND deleted_at IS NULL AND (org_id IS NULL OR org_id = :orgId::uuid)`,
    { scriptId, ...owner },
  );
}

/** Whether a static group is one the owner's devices can be put in (its organization's, or any of the partner's). */
async function groupOfOwner(db: Db, owner: store.Owner, groupId: string) {
  const row = await one(
    db,
    `SELECT 1 FROM device_groups g JOIN organizations o ON o.id = g.org_id AND o.deleted_at IS NULL
      WHERE g.id = :groupId::uuid AND g.type = 'static' AND o.partner_id = :partnerId::uuid
        AND (:orgId::uuid IS NULL OR g.org_id = :orgId::uuid)`,
    { groupId, ...owner },
  );
  return row !== undefined;
}

/**
 * Actions checked against what they name (400 naming the action's field, nothing stored): a run-script action's
 * script is the owner's and its parameters fit the declared ones; secret values are sealed apart.
 */
async function storedActions(db: Db, owner: store.Owner, actions: Action[]): Promise<store.StoredAction[]> {
  const out: store.StoredAction[] = [];
  for (const [index, action] of actions.entries()) {
    const at = `actions.${index}`;
    if (action.type === 'run-script') {
      const script = await selectOwnerScript(db, owner, action.scriptId);
      if (!script) throw invalid(`${at}.scriptId`, 'scriptId is not a script this automation can run');
      const declared: ScriptParameter[] = openParameters(script.parameters);
      try {
        resolveParameters(declared, action.parameters ?? {});
      } catch (error) {
        if (!(error instanceof DomainError)) throw error;
        const issues = (error.details as { path: string; message: string; code: string }[]).map((issue) => ({
          ...issue,
          path: issue.path.replace(/^body\./, `body.${at}.`),
        }));
        throw ValidationFailed(`Invalid script parameters: ${issues[0]!.path}`, issues);
      }
      const secret = new Set(declared.filter((p) => p.secret).map((p) => p.name));
      const parameters: Record<string, unknown> = {};
      const sealedParameters: Record<string, string> = {};
      for (const [name, value] of Object.entries(action.parameters ?? {})) {
        if (!secret.has(name)) parameters[name] = value;
        else {
          const sealed = sealSecret(JSON.stringify(value));
          if (!sealed) throw new Error('Secrets cannot be sealed: no seal key is set');
          sealedParameters[name] = sealed;
        }
      }
      out.push({
        type: action.type,
        scriptId: action.scriptId,
        parameters,
        sealedParameters,
        onFailure: action.onFailure,
      });
      continue;
    }
    if (
      (action.type === 'add-to-group' || action.type === 'remove-from-group') &&
      !(await groupOfOwner(db, owner, action.groupId))
    )
      throw invalid(`${at}.groupId`, "groupId is not a static device group of this automation's owner");
    if (action.type === 'notify') {
      const unknown = await selectUnknownChannelIds(db, owner, action.channelIds);
      if (unknown.length > 0) throw invalid(`${at}.channelIds`, `Unknown channel ${unknown[0]}`);
    }
    out.push({ ...action });
  }
  return out;
}

/** Schedules checked by the one engine: a 400 naming the trigger's field. */
function checkTriggers(triggers: Trigger[]): Trigger[] {
  return triggers.map((trigger, index) => {
    if (trigger.type !== 'schedule') return trigger;
    const at = `body.triggers.${index}.schedule`;
    const schedule = trigger.schedule;
    const start = schedule.start.length === 16 ? `${schedule.start}:00` : schedule.start;
    compileOrRefuse(
      { rrule: schedule.rrule, start, timezone: schedule.timezone ?? 'UTC' },
      { rrule: `${at}.rrule`, start: `${at}.start`, timezone: `${at}.timezone`, exdates: `${at}.exdates` },
    );
    return { ...trigger, schedule: { ...schedule, start } };
  });
}

const describe = (row: store.AutomationRow) => ({
  name: row.name,
  enabled: row.enabled,
  version: row.version,
  triggers: row.triggers,
  conditions: row.conditions,
  actions: row.actions.map(publicAction),
  guards: row.guards,
});

export async function createAutomation(db: Db, principal: Principal, input: CreateAutomation, audit: AuditContext) {
  const owner = await ownerOf(db, principal, input);
  const triggers = checkTriggers(input.triggers);
  const actions = await storedActions(db, owner, input.actions);
  const row = await db.transaction(async (tx) => {
    const created = await store.insertAutomation(
      tx,
      owner,
      {
        name: input.name,
        enabled: input.enabled,
        triggers,
        conditions: input.conditions ?? null,
        actions,
        guards: input.guards ?? defaultGuards,
      },
      actorOf(principal),
    );
    await auditAutomation(tx, audit, created, 'automation.create', { after: describe(created) });
    return created;
  });
  await armAutomation(db, row.id);
  return reply(row);
}

export function listAutomations(db: Db, principal: Principal, query: Page & { orgId?: string }) {
  requirePermission(principal, 'scripts:read');
  return store
    .selectAutomations(db, principal, query.orgId, query)
    .then((page) => ({ ...page, data: page.data.map(reply) }));
}

export async function reachableAutomation(db: Db, principal: Principal, id: string) {
  requirePermission(principal, 'scripts:read');
  return assertReachable(await store.selectAutomation(db, principal, id), 'Automation');
}

/** An automation the principal may change: organization callers only their organization's own. */
export async function writableAutomation(db: Db, principal: Principal, id: string) {
  const row = await reachableAutomation(db, principal, id);
  assertOwnerEditable(principal, row, automations);
  return row;
}

export const getAutomation = async (db: Db, principal: Principal, id: string) =>
  reply(await reachableAutomation(db, principal, id));

export async function updateAutomation(
  db: Db,
  principal: Principal,
  id: string,
  change: UpdateAutomation,
  audit: AuditContext,
) {
  const before = await writableAutomation(db, principal, id);
  const owner = { partnerId: before.partnerId, orgId: before.orgId };
  const triggers = change.triggers ? checkTriggers(change.triggers) : before.triggers;
  const actions = change.actions ? await storedActions(db, owner, change.actions) : before.actions;
  const row = await db.transaction(async (tx) => {
    if (!(await store.selectLiveAutomation(tx, id, true))) throw NotFound('Automation');
    const updated = await store.updateAutomationRow(
      tx,
      id,
      {
        name: change.name ?? before.name,
        enabled: change.enabled ?? before.enabled,
        triggers,
        conditions: change.conditions === undefined ? before.conditions : change.conditions,
        actions,
        guards: change.guards ?? before.guards,
      },
      actorOf(principal),
    );
    await auditAutomation(
      tx,
      audit,
      updated,
      'automation.update',
      changedFields(describe(before), describe(updated), [
        'name',
        'enabled',
        'version',
        'triggers',
        'conditions',
        'actions',
        'guards',
      ]),
    );
    return updated;
  });
  await armAutomation(db, id);
  return reply(row);
}

/** Soft delete: its armed occurrences find it gone; its runs stay readable. */
export async function deleteAutomation(db: Db, principal: Principal, id: string, audit: AuditContext) {
  const row = await writableAutomation(db, principal, id);
  await db.transaction(async (tx) => {
    await store.softDeleteAutomation(tx, id);
    await auditAutomation(tx, audit, row, 'automation.delete', { before: describe(row) });
  });
}

export async function listVersions(db: Db, principal: Principal, id: string, page: Page) {
  await reachableAutomation(db, principal, id);
  const versions = await store.selectVersions(db, id, page);
  return {
    ...versions,
    data: versions.data.map((v) => ({
      ...(v as Record<string, unknown>),
      actions: ((v as { actions: store.StoredAction[] }).actions ?? []).map(publicAction),
    })),
  } as never;
}
