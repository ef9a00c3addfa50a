import type { Db } from '../db/db.ts';
import { RateLimited } from '../errors.ts';
import type { AgentDevice, IngestCharge, IngestKind, Reservation } from './store.ts';
import * as store from './store.ts';

/**
 * Flood protection: entries each device may submit per clock hour, unless its organization
 * overrides them (agent_ingest_limits). The defaults are a hundred times what a healthy agent sends;
 * they stop a looping agent, not a chatty one. INGEST_LOGS_PER_DEVICE_HOUR and
 * INGEST_EVENTS_PER_DEVICE_HOUR change them for every organization without an override.
 */
const defaults: Record<IngestKind, { value: number; variable: string }> = {
  logs: { value: 100_000, variable: 'INGEST_LOGS_PER_DEVICE_HOUR' },
  events: { value: 50_000, variable: 'INGEST_EVENTS_PER_DEVICE_HOUR' },
  // Custom field values scripts write: no per-organization override, only the variable.
  fields: { value: 1_000, variable: 'INGEST_FIELDS_PER_DEVICE_HOUR' },
};

export function defaultBudget(kind: IngestKind): number {
  const configured = Number(process.env[defaults[kind].variable] ?? Number.NaN);
  return Number.isInteger(configured) && configured >= 0 ? configured : defaults[kind].value;
}

const what: Record<IngestKind, string> = {
  logs: 'diagnostic log entries',
  events: 'event log entries',
  fields: 'custom field writes',
};

/** The charge of `count` entries (`needed` must still fit) as ingestChargeSql takes it, with the budget configured. */
export const ingestCharge = (device: AgentDevice, kind: IngestKind, count: number, needed = count): IngestCharge => ({
  deviceId: device.id,
  orgId: device.orgId,
  kind,
  count,
  needed,
  defaultBudget: defaultBudget(kind),
});

/**
 * Charges `count` entries to the device's hourly budget; beyond it, 429 RATE_LIMITED with Retry-After
 * (seconds until the clock hour ends) and nothing is charged. `needed` (default `count`) is how many
 * must still fit: 1 with a `count` of 0 checks that the budget is not used up, charging nothing.
 */
export async function reserveIngest(
  db: Db,
  device: AgentDevice,
  kind: IngestKind,
  count: number,
  needed = count,
): Promise<Reservation & { windowStart: Date }> {
  return charged(await store.upsertIngestUsage(db, ingestCharge(device, kind, count, needed)), kind, needed);
}

/** The reservation of a charge (ingestChargeSql) that took its entries; else 429 RATE_LIMITED with Retry-After. */
export function charged(
  reservation: Reservation,
  kind: IngestKind,
  needed: number,
): Reservation & { windowStart: Date } {
  if (!reservation.windowStart) {
    throw RateLimited(
      needed > reservation.budget
        ? `This request holds ${needed} ${what[kind]}, more than the device's hourly budget of ${reservation.budget}; send smaller requests`
        : `The device has used its hourly budget of ${reservation.budget} ${what[kind]}; retry after ${reservation.retryAfterSeconds} seconds`,
      reservation.retryAfterSeconds,
      { budget: reservation.budget, requested: needed },
    );
  }
  return { ...reservation, windowStart: reservation.windowStart };
}

/** Gives back what a reservation charged but did not store (failed batches, duplicates). */
export async function releaseIngest(
  db: Db,
  device: AgentDevice,
  kind: IngestKind,
  reservation: { windowStart: Date },
  count: number,
): Promise<void> {
  if (count > 0)
    await store.decrementIngestUsage(db, { deviceId: device.id, kind, windowStart: reservation.windowStart, count });
}
