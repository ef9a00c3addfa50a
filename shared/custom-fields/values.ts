import { randomUUID } from 'node:crypto';
import { reserveIngest } from '../agents/ingest-budget.ts';
import { deviceOfAgent } from '../agents/log-access.ts';
import { type AuditContext, auditChange } from '../audit/writer.ts';
import type { AgentPrincipal, Principal } from '../auth/principal.ts';
import { assertReachable, requirePermission } from '../auth/tenancy.ts';
import type { Db } from '../db/db.ts';
import { Conflict, Forbidden, NotFound, ValidationFailed } from '../errors.ts';
import { deviceResource, getDevice } from '../hierarchy/devices.ts';
import { tellDeviceEvents } from '../queue/device-events.ts';
import type { FieldType, FieldValue } from './schemas.ts';
import type { DefinitionRecord, ValueTarget } from './store.ts';
import * as store from './store.ts';
import { checkValue } from './value.ts';

/** One changed value, as the device.update audit row shows it. */
export interface ValueChange {
  device: ValueTarget;
  field: DefinitionRecord;
  before: FieldValue | null;
  after: FieldValue | null;
}

/** device.update rows of changed values, one per device, each with its fields before and after. */
export function valueChangeEvents(changes: ValueChange[]) {
  const byDevice = new Map<string, ValueChange[]>();
  for (const change of changes) byDevice.set(change.device.id, [...(byDevice.get(change.device.id) ?? []), change]);
  return [...byDevice.values()].map((deviceChanges) => {
    const device = deviceChanges[0]!.device;
    const side = (pick: (change: ValueChange) => FieldValue | null) => ({
      customFields: Object.fromEntries(deviceChanges.map((change) => [change.field.key, pick(change)])),
    });
    return {
      orgId: device.orgId,
      action: 'device.update',
      ...deviceResource(device),
      details: { before: side((change) => change.before), after: side((change) => change.after) },
    };
  });
}

/** Why a field takes no value on this device, if it does not: its operating systems (osTypes) exclude the device's. */
export function appliesTo(field: DefinitionRecord, device: { osType: string | null }): string | undefined {
  if (field.osTypes && device.osType && !field.osTypes.includes(device.osType))
    return `The field applies to ${field.osTypes.join(', ')} devices, not ${device.osType}`;
  return undefined;
}

async function fieldOfDevice(db: Db, deviceId: string, key: string) {
  const device = assertReachable(await store.selectValueTarget(db, deviceId), 'Device');
  const field = assertReachable(
    await store.selectVisibleDefinition(db, device.partnerId, device.orgId, key),
    'Custom field',
  );
  return { device, field };
}

const invalidValue = (message: string) =>
  ValidationFailed(`Invalid value: ${message}`, [{ path: 'body.value', message, code: 'custom' }]);

/**
 * Tells `custom_field.changed` for values set (a cleared value tells nothing), once their change committed: one
 * event per device and field, carried a hundred to a job.
 */
export function tellValuesChanged(values: { deviceId: string; key: string; value: FieldValue }[]) {
  return tellDeviceEvents(
    values.map((each) => ({
      event: 'custom_field.changed' as const,
      eventId: randomUUID(),
      deviceId: each.deviceId,
      data: { key: each.key, value: each.value as string | number | boolean },
    })),
  );
}

/** Validates and stores one value (never coerced), auditing a change as device.update with before and after. */
async function writeValue(
  db: Db,
  device: ValueTarget,
  field: DefinitionRecord,
  value: FieldValue,
  audit: AuditContext,
) {
  const checked = checkValue(field, value);
  if (checked.value === undefined) throw invalidValue(checked.reason);
  const notApplicable = appliesTo(field, device);
  if (notApplicable) throw invalidValue(notApplicable);
  const changed = await db.transaction(async (tx) => {
    const [written] = await store.upsertValues(tx, [{ deviceId: device.id, fieldId: field.id, value: checked.value }]);
    if (written)
      await auditChange(tx, audit, valueChangeEvents([{ device, field, before: written.before, after: value }]));
    return written !== undefined;
  });
  if (changed) await tellValuesChanged([{ deviceId: device.id, key: field.key, value: checked.value }]);
  return { deviceId: device.id, fieldId: field.id, key: field.key, type: field.type, value: checked.value };
}

/** PUT /devices/{id}/custom-fields/{key} (devices:write). */
export async function setDeviceValue(
  db: Db,
  principal: Principal,
  deviceId: string,
  key: string,
  value: FieldValue,
  audit: AuditContext,
) {
  await getDevice(db, principal, deviceId);
  requirePermission(principal, 'devices:write');
  const { device, field } = await fieldOfDevice(db, deviceId, key);
  return writeValue(db, device, field, value, audit);
}

/** DELETE /devices/{id}/custom-fields/{key} (devices:write): a required field's value cannot be cleared (409). */
export async function clearDeviceValue(
  db: Db,
  principal: Principal,
  deviceId: string,
  key: string,
  audit: AuditContext,
) {
  await getDevice(db, principal, deviceId);
  requirePermission(principal, 'devices:write');
  const { device, field } = await fieldOfDevice(db, deviceId, key);
  if (field.required) throw Conflict(`The custom field ${key} is required: its value can be changed, not cleared`);
  await db.transaction(async (tx) => {
    const deleted = await store.deleteValue(tx, device.id, field.id);
    if (deleted)
      await auditChange(tx, audit, valueChangeEvents([{ device, field, before: deleted.before, after: null }]));
  });
}

/** The system sets a device's value (an automation's action), checked and audited as any other write. */
export async function setSystemValue(db: Db, deviceId: string, key: string, value: FieldValue, audit: AuditContext) {
  const { device, field } = await fieldOfDevice(db, deviceId, key);
  return writeValue(db, device, field, value, audit);
}

/**
 * PUT /agents/{id}/custom-fields/{key} (a script running on the device writes through the API): the
 * agent's own device only, fields flagged scriptWritable only (403 otherwise), one entry of the device's hourly
 * `fields` budget per write (429 beyond it). The agent is the actor of the device.update row.
 */
export async function setAgentValue(
  db: Db,
  caller: AgentPrincipal,
  agentId: string,
  key: string,
  value: FieldValue,
  audit: AuditContext,
) {
  const agentDevice = await deviceOfAgent(db, caller, agentId);
  const { device, field } = await fieldOfDevice(db, agentDevice.id, key);
  if (!field.scriptWritable) throw Forbidden(`The custom field ${key} is not writable by scripts (scriptWritable)`);
  await reserveIngest(db, agentDevice, 'fields', 1);
  return writeValue(db, device, field, value, { ...audit, actorName: device.hostname });
}

/**
 * GET /devices/{id}: the device with its custom fields as `customFields: { key: value }` (a field without a stored
 * value shows its defaultValue, when it has one and applies to the device) and each with its type and origin.
 */
export async function getDeviceWithFields(db: Db, principal: Principal, deviceId: string) {
  const device = await getDevice(db, principal, deviceId);
  const target = await store.selectValueTarget(db, deviceId);
  if (!target) throw NotFound('Device');
  const [definitions, values] = await Promise.all([
    store.selectVisibleDefinitions(db, target.partnerId, target.orgId),
    store.selectDeviceValues(db, [deviceId]),
  ]);
  const details = fieldDetails(definitions, new Map(values.map((value) => [value.fieldId, value.value])), target);
  return {
    ...device,
    customFields: Object.fromEntries(details.map((detail) => [detail.key, detail.value])),
    customFieldDetails: details,
  };
}

/**
 * The custom fields of several devices of one organization, as `GET /devices/{id}` answers each (stored values, or
 * the defaults of fields that apply to the device's OS): one statement for the definitions, one for the values.
 */
export async function customFieldsOfDevices(
  db: Db,
  owner: { partnerId: string; orgId: string },
  devices: readonly { id: string; osType: string | null }[],
): Promise<Map<string, Record<string, FieldValue>>> {
  if (devices.length === 0) return new Map();
  const [definitions, values] = await Promise.all([
    store.selectVisibleDefinitions(db, owner.partnerId, owner.orgId),
    store.selectDeviceValues(
      db,
      devices.map((device) => device.id),
    ),
  ]);
  return new Map(
    devices.map((device) => {
      const stored = new Map(values.filter((v) => v.deviceId === device.id).map((v) => [v.fieldId, v.value]));
      const details = fieldDetails(definitions, stored, device);
      return [device.id, Object.fromEntries(details.map((detail) => [detail.key, detail.value]))];
    }),
  );
}

/** A device's fields: its stored value of each visible definition, else the default of one that applies to it. */
function fieldDetails(
  definitions: readonly DefinitionRecord[],
  stored: ReadonlyMap<string, FieldValue>,
  target: { osType: string | null },
) {
  return definitions.flatMap(
    (field): { key: string; fieldId: string; type: FieldType; value: FieldValue; source: 'value' | 'default' }[] => {
      const value = stored.get(field.id);
      if (value !== undefined) return [{ key: field.key, fieldId: field.id, type: field.type, value, source: 'value' }];
      if (field.defaultValue !== null && !appliesTo(field, target))
        return [{ key: field.key, fieldId: field.id, type: field.type, value: field.defaultValue, source: 'default' }];
      return [];
    },
  );
}
