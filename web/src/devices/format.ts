/** What the devices list and a device's page share: the online rule, how values read, the API's shapes. */
import type { z } from 'zod';
import type { device } from '../../../shared/hierarchy/schemas.ts';

export type Device = z.output<typeof device>;
/**
 * One device of POST /orgs/organizations/{id}/device-summaries (shared/device-groups/schemas.ts deviceSummaries, whose
 * module the page cannot load even for types: it reaches node:net).
 */
export interface DeviceSummary {
  deviceId: string;
  openAlerts: number | null;
  groups: Group[];
  customFields: Record<string, unknown>;
}

/** A device group as the pages show it (shared/device-groups/schemas.ts deviceGroup, in part). */
export interface Group {
  id: string;
  name: string;
  type: 'static' | 'dynamic';
}

/**
 * An agent is online when it was seen within this many minutes: the window of the `online` field of the device-group
 * filter language (shared/device-groups/filter-fields.ts), so the column and a filter on `online` agree. The API's
 * `online` also counts the agent's live WebSocket connection, which keeps it online between heartbeats: the pages
 * read that first.
 */
export const onlineWindowMinutes = 5;

export function isOnline(lastSeenAt: string | null, now = Date.now()): boolean {
  return lastSeenAt !== null && Date.parse(lastSeenAt) >= now - onlineWindowMinutes * 60_000;
}

/** A custom field's value as text: choices joined, booleans as yes/no, none as ''. */
export function fieldText(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (Array.isArray(value)) return value.map(String).join(', ');
  if (typeof value === 'boolean') return value ? 'yes' : 'no';
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

/** A time in the reader's time zone; the exact UTC instant goes in the element's title. */
export const localTime = (iso: string) => new Date(iso).toLocaleString();

/** The operating system as one phrase: type and version. */
export const osText = (d: Pick<Device, 'osType' | 'osVersion'>) => [d.osType, d.osVersion].filter(Boolean).join(' ');
