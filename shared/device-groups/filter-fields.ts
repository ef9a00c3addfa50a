import { onlineWindowMinutes } from '../agents/online.ts';
import { agentStatuses } from '../hierarchy/schemas.ts';
import type { PostureCategory, PostureStatus } from '../posture/catalog.ts';

/**
 * The fields a dynamic group's filter may test, one entry each. A field names its value type, which
 * decides the operators it takes and how a value is checked (filter.ts), and the SQL expression of its value for
 * the device row `d`. A new field is one more entry: a custom field (`customField:<key>`, below) takes a key bound
 * as a parameter; management posture is a type of its own, tested with `has` (postureMatchSql). docs/device-groups.md.
 */
export type FieldType = 'text' | 'enum' | 'uuid' | 'timestamp' | 'ip' | 'boolean' | 'posture';

/** SQL types a filter value may be bound as. */
export type SqlCast = 'text' | 'uuid' | 'timestamptz' | 'inet' | 'boolean' | 'int';

/** Binds a value taken from the filter as a named, cast parameter and returns its placeholder (`:f3::text`). */
export type Bind = (value: string | number | boolean, cast: SqlCast) => string;

export interface FilterField {
  type: FieldType;
  /** The values of an `enum` field. */
  values?: readonly string[];
  /** Whether the field is read with a key after a colon (`customField:assetTag`); the key reaches `sql` bound. */
  keyed?: boolean;
  /** The field's value for the device row `d`; anything taken from the filter goes through `bind`. */
  sql(bind: Bind, key: string | undefined): string;
  /**
   * An indexed copy of a timestamp field cut to the hour (`of` cuts a bound the same way): a comparison with a bound
   * first narrows by it, so the index finds the candidates and the field itself decides (filter.ts compileFilter).
   */
  hour?: { column: string; of(bound: string): string };
}

/** last_seen_at's hour (UTC), the indexed stand-in that lets a heartbeat update its row heap-only (migration 0096). */
const lastSeenHour = {
  column: 'd.last_seen_hour',
  of: (bound: string) => `date_trunc('hour', (${bound}) AT TIME ZONE 'UTC')`,
};

export const filterFields: Readonly<Record<string, FilterField>> = {
  hostname: { type: 'text', sql: () => 'd.hostname' },
  displayName: { type: 'text', sql: () => 'd.display_name' },
  osType: { type: 'text', sql: () => 'd.os_type' },
  osVersion: { type: 'text', sql: () => 'd.os_version' },
  agentVersion: { type: 'text', sql: () => 'd.agent_version' },
  siteId: { type: 'uuid', sql: () => 'd.site_id' },
  agentStatus: { type: 'enum', values: agentStatuses, sql: () => 'd.agent_status' },
  online: {
    type: 'boolean',
    sql: () => {
      const since = `now() - interval '${onlineWindowMinutes} minutes'`;
      // A live WebSocket connection keeps its device online between the agent's heartbeats.
      return `(coalesce(${lastSeenHour.column} >= ${lastSeenHour.of(since)} AND d.last_seen_at >= ${since}, false)
        OR EXISTS (SELECT 1 FROM agent_connections c WHERE c.device_id = d.id))`;
    },
  },
  lastSeenAt: { type: 'timestamp', sql: () => 'd.last_seen_at', hour: lastSeenHour },
  createdAt: { type: 'timestamp', sql: () => 'd.created_at' },
  // last_ip holds only what node:net's isIP accepted (the heartbeat's client IP), so the cast cannot fail.
  lastIp: { type: 'ip', sql: () => 'd.last_ip::inet' },
  // A custom field's value in its text form, read as `customField:<key>`: a device holds values only of
  // definitions it sees, and those hold each key once, so the subquery yields one row at most.
  customField: {
    type: 'text',
    keyed: true,
    sql: (bind, key) => `(SELECT v.value #>> '{}' FROM device_custom_field_values v
      JOIN custom_field_definitions f ON f.id = v.field_id
      WHERE v.device_id = d.id AND f.key = ${bind(key!, 'text')})`,
  },
  // The device id: the `has` operator looks for a detection of its latest posture snapshot (postureMatchSql).
  posture: { type: 'posture', sql: () => 'd.id' },
};

/** The value of a posture condition: `{ category, product?, status? }`. */
export interface PostureMatch {
  category: PostureCategory;
  product?: string;
  status?: PostureStatus;
}

/** Whether the latest posture snapshot of the device `deviceId` detected a product of the category. */
export function postureMatchSql(deviceId: string, match: PostureMatch, bind: Bind): string {
  const category = ` AND x.category = ${bind(match.category, 'text')}`;
  const product = match.product === undefined ? '' : ` AND lower(x.product) = lower(${bind(match.product, 'text')})`;
  const status = match.status === undefined ? '' : ` AND x.status = ${bind(match.status, 'text')}`;
  return `EXISTS (SELECT 1 FROM device_posture_detections x WHERE x.device_id = ${deviceId}${category}${product}${status})`;
}
