import type { z } from 'zod';
import { type AuditContext, auditChange } from '../audit/writer.ts';
import type { Principal } from '../auth/principal.ts';
import { assertReachable, requirePermission } from '../auth/tenancy.ts';
import type { Db } from '../db/db.ts';
import { NotFound, ValidationFailed } from '../errors.ts';
import type { bulkValues } from './schemas.ts';
import * as store from './store.ts';
import { checkValue } from './value.ts';
import { appliesTo, tellValuesChanged, type ValueChange, valueChangeEvents } from './values.ts';

type Issue = { path: string; message: string; code: string };

/**
 * PUT /custom-fields/{fieldId}/values (devices:write): one field's value on many devices (null clears it). Every
 * item is checked before anything is written: a bad item is a 400 naming it (`body.values.<i>...`), a device the
 * caller does not reach a 404 naming none. Values equal to the stored ones write nothing; each changed device gets
 * one device.update row with before and after.
 */
export async function setFieldValues(
  db: Db,
  principal: Principal,
  fieldId: string,
  input: z.output<typeof bulkValues>,
  audit: AuditContext,
) {
  requirePermission(principal, 'devices:read');
  const field = assertReachable(await store.selectDefinition(db, principal, fieldId), 'Custom field');
  requirePermission(principal, 'devices:write');
  const issues: Issue[] = [];
  const firstIndex = new Map<string, number>();
  input.values.forEach((item, i) => {
    const first = firstIndex.get(item.deviceId);
    if (first === undefined) firstIndex.set(item.deviceId, i);
    else issues.push({ path: `body.values.${i}.deviceId`, message: `The device is item ${first} too`, code: 'custom' });
  });
  if (issues.length > 0) throw ValidationFailed(`Invalid item values.${issues[0]!.path.split('.')[2]}`, issues);
  const devices = await store.selectReachableValueTargets(db, principal, [...firstIndex.keys()]);
  if (devices.length !== firstIndex.size) throw NotFound('Device');
  const byId = new Map(devices.map((device) => [device.id, device]));
  for (const [i, item] of input.values.entries()) {
    const device = byId.get(item.deviceId)!;
    const fail = (at: 'deviceId' | 'value', message: string) =>
      issues.push({ path: `body.values.${i}.${at}`, message, code: 'custom' });
    if (device.partnerId !== field.partnerId || (field.orgId !== null && field.orgId !== device.orgId)) {
      fail('deviceId', `The custom field ${field.key} is not defined for this device's organization`);
      continue;
    }
    if (item.value === null) {
      if (field.required) fail('value', `The custom field ${field.key} is required: its value cannot be cleared`);
      continue;
    }
    const checked = checkValue(field, item.value);
    const notApplicable = appliesTo(field, device);
    if (checked.value === undefined) fail('value', checked.reason);
    else if (notApplicable) fail('value', notApplicable);
  }
  if (issues.length > 0) throw ValidationFailed(`Invalid item values.${issues[0]!.path.split('.')[2]}`, issues);

  const sets = input.values.flatMap((item) =>
    item.value === null ? [] : [{ deviceId: item.deviceId, fieldId: field.id, value: item.value }],
  );
  const clears = input.values.flatMap((item) => (item.value === null ? [item.deviceId] : []));
  const changes = await db.transaction(async (tx) => {
    const written = sets.length > 0 ? await store.upsertValues(tx, sets) : [];
    const deleted = clears.length > 0 ? await store.deleteValues(tx, field.id, clears) : [];
    const after = new Map(input.values.map((item) => [item.deviceId, item.value]));
    const changes = [...written, ...deleted].map(
      (change): ValueChange => ({
        device: byId.get(change.deviceId)!,
        field,
        before: change.before ?? null,
        after: after.get(change.deviceId) ?? null,
      }),
    );
    await auditChange(tx, audit, valueChangeEvents(changes));
    return changes;
  });
  const changed = new Set(changes.map((change) => change.device.id));
  await tellValuesChanged(
    changes.flatMap((change) =>
      change.after === null ? [] : [{ deviceId: change.device.id, key: field.key, value: change.after }],
    ),
  );
  return {
    fieldId: field.id,
    key: field.key,
    type: field.type,
    changed: changed.size,
    unchanged: input.values.length - changed.size,
    values: input.values.map((item) => ({
      deviceId: item.deviceId,
      value: item.value,
      changed: changed.has(item.deviceId),
    })),
  };
}
