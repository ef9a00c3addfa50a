import type { z } from 'zod';
import { changedFields } from '../audit/changes.ts';
import { type AuditContext, auditChange } from '../audit/writer.ts';
import type { Principal } from '../auth/principal.ts';
import { reachableOrganization } from '../auth/reachable-organization.ts';
import type { Db } from '../db/db.ts';
import { nameKey } from '../imports/name-key.ts';
import {
  type Decision,
  type DerivedRow,
  decide,
  importSummaryEvent,
  linkedRecords,
  matchKey,
  plannedOutcome,
  repeatedKeys,
  reportRow,
  rowNumberOf,
  summarize,
} from '../imports/rows.ts';
import type { Outcome } from '../imports/schemas.ts';
import { type DeviceFilter, filterIssues } from './filter.ts';
import { groupsWrite } from './groups.ts';
import type { groupImport } from './schemas.ts';
import type { GroupRow } from './store.ts';
import * as store from './store.ts';

type ImportInput = z.output<typeof groupImport>;
type ImportedRow = ImportInput['groups'][number];

/** JSON with object keys sorted: a stored filter (jsonb reorders keys) compared with the one imported. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object')
    return `{${Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonical((value as Record<string, unknown>)[key])}`)
      .join(',')}}`;
  return JSON.stringify(value);
}

/**
 * Annotates each row against the organization's groups (saved filters of another RMM map to dynamic groups, matched
 * on (organization, sourceSystem, externalId)): `invalid` when its filter does not check,
 * `conflict` when its key or name appears twice in the request or its name belongs to another group, `update`
 * or `unchanged` when the key is already imported, `create` otherwise.
 */
async function deriveRows(db: Db, orgId: string, rows: ImportedRow[]) {
  const existing = linkedRecords(await store.selectImportedGroups(db, orgId, rows));
  const named = new Map(
    (
      await store.selectGroupsNamed(
        db,
        orgId,
        rows.map((row) => row.name),
      )
    ).map((group) => [nameKey(group.name), group.id]),
  );
  const count = (values: string[]) => values.reduce((m, v) => m.set(v, (m.get(v) ?? 0) + 1), new Map<string, number>());
  const keys = repeatedKeys(rows);
  const names = count(rows.map((row) => nameKey(row.name)));
  return rows.map((row, index): DerivedRow & { existing?: GroupRow } => {
    const base = { row: rowNumberOf(index), externalId: row.externalId };
    const issues = filterIssues(row.filter);
    if (issues.length > 0)
      return {
        ...base,
        annotation: 'invalid',
        reason: 'The filter does not check',
        issues: issues.map((issue) => ({ path: ['filter', ...issue.path].join('.'), message: issue.message })),
      };
    if (keys.has(matchKey(row)))
      return { ...base, annotation: 'conflict', reason: 'Another row of this import has the same externalId' };
    if (names.get(nameKey(row.name))! > 1)
      return { ...base, annotation: 'conflict', reason: 'Another row of this import has the same name' };
    const group = existing.get(matchKey(row));
    const owner = named.get(nameKey(row.name));
    if (owner && owner !== group?.id)
      return {
        ...base,
        annotation: 'conflict',
        reason: `A device group named ${JSON.stringify(row.name)} already exists in this organization`,
      };
    if (!group) return { ...base, annotation: 'create' };
    const same = group.name === row.name && canonical(group.filter) === canonical(row.filter);
    return { ...base, annotation: same ? 'unchanged' : 'update', targetId: group.id, existing: group };
  });
}

const present = (row: DerivedRow, outcome: Outcome, reason = row.reason, groupId = row.targetId) => ({
  ...reportRow(row, outcome, reason),
  ...(groupId ? { groupId } : {}),
});

/** POST …/device-groups/import/preview: what a commit would do with each row; stores nothing. */
export async function previewGroupImport(db: Db, principal: Principal, orgId: string, input: ImportInput) {
  await reachableOrganization(db, principal, orgId, groupsWrite);
  const rows = (await deriveRows(db, orgId, input.groups)).map((row) => present(row, plannedOutcome(row.annotation)));
  return { committed: false, summary: summarize(rows), rows };
}

type DerivedGroup = Awaited<ReturnType<typeof deriveRows>>[number];
const givenRow = (input: ImportInput, row: DerivedRow) => input.groups[row.row - 1]!;

/** Stores the decided creates and updates; the row reports with the group each row created or changed. */
async function applyRows(tx: Db, orgId: string, input: ImportInput, derived: DerivedGroup[], decisions: Decision[]) {
  const toCreate = derived.filter((_, i) => decisions[i]!.apply === 'create');
  const toUpdate = derived.filter((_, i) => decisions[i]!.apply === 'update');
  const created = await store.insertGroupRows(
    tx,
    orgId,
    toCreate.map((row) => {
      const given = givenRow(input, row);
      return {
        name: given.name,
        type: 'dynamic',
        siteId: null,
        parentId: null,
        filter: given.filter as DeviceFilter,
        sourceSystem: given.sourceSystem,
        externalId: given.externalId,
      };
    }),
  );
  const updated = await store.updateImportedGroupRows(
    tx,
    toUpdate.map((row) => ({
      id: row.targetId!,
      name: givenRow(input, row).name,
      filter: givenRow(input, row).filter as DeviceFilter,
    })),
  );
  const createdIds = new Map(toCreate.map((row, i) => [row.row, created[i]!.id]));
  const rows = derived.map((row, i) =>
    present(row, decisions[i]!.outcome, decisions[i]!.reason, createdIds.get(row.row) ?? row.targetId),
  );
  return {
    rows,
    created,
    updated: updated.map((after) => ({ after, before: derived.find((row) => row.targetId === after.id)!.existing! })),
  };
}

/**
 * POST …/device-groups/import: re-derives every row under the organization's group lock and applies what it may
 * (imports.decide): a second identical import changes nothing and reports every row unchanged. Audited per group
 * created (device_group.create) or changed (device_group.update), and once as device_group.import.
 */
export async function commitGroupImport(
  db: Db,
  principal: Principal,
  orgId: string,
  input: ImportInput,
  audit: AuditContext,
) {
  const org = await reachableOrganization(db, principal, orgId, groupsWrite);
  const rows = await db.transaction(async (tx) => {
    await store.lockGroupsOf(tx, orgId);
    const derived = await deriveRows(tx, orgId, input.groups);
    const decisions = derived.map((row) => decide(row, givenRow(input, row).acknowledge));
    const { rows, created, updated } = await applyRows(tx, orgId, input, derived, decisions);
    await auditChange(tx, audit, [
      ...created.map((group) => ({
        orgId,
        action: 'device_group.create',
        resourceType: 'device_group',
        resourceId: group.id,
        resourceName: group.name,
        details: {
          after: {
            name: group.name,
            type: group.type,
            filter: group.filter,
            sourceSystem: group.sourceSystem,
            externalId: group.externalId,
          },
        },
      })),
      ...updated.map(({ before, after }) => ({
        orgId,
        action: 'device_group.update',
        resourceType: 'device_group',
        resourceId: after.id,
        resourceName: after.name,
        details: changedFields(before, after, ['name', 'filter']),
      })),
      importSummaryEvent(org, 'device_group.import', rows),
    ]);
    return rows;
  });
  return { committed: true, summary: summarize(rows), rows };
}
