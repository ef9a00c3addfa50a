/**
 * The two shapes the trail arrives in, the viewer's flattened list (GET /audit-logs) and the
 * detailed entry (search and one entry), read into the one row the page shows. Their types are the
 * API's response schemas (types only: nothing of shared/ is bundled).
 */
import type { AuditDetailedEntry, AuditViewerEntry } from '../../shared/audit/schemas.ts';

type Json = Record<string, unknown>;

/** What both formats add for the viewer. */
type Additions = Pick<AuditViewerEntry, 'orgId' | 'seq' | 'actorType' | 'actorHostname' | 'category' | 'result'>;

export interface Row extends Additions {
  id: string;
  timestamp: string;
  action: string;
  actor: { name: string; email: string; role: string; id?: string };
  resource: { type: string; name: string; id?: string | null };
  ipAddress: string;
  userAgent: string;
  details: Json;
  changes: { before: Json; after: Json };
  errorMessage: string | null;
}

const object = (value: unknown): Json | undefined =>
  value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Json) : undefined;

/** The before/after of an entry's details, where the service keeps them (details.before/after or details.changes.before/after). */
export function changesOf(details: Json): { before: Json; after: Json } {
  const changes = object(details.changes);
  return {
    before: object(details.before) ?? object(changes?.before) ?? {},
    after: object(details.after) ?? object(changes?.after) ?? {},
  };
}

function parseDetails(text: string): Json {
  try {
    return object(JSON.parse(text)) ?? {};
  } catch {
    return {};
  }
}

export function rowOfViewerEntry(entry: AuditViewerEntry): Row {
  const details = parseDetails(entry.details);
  return {
    ...additions(entry),
    id: entry.id,
    timestamp: entry.timestamp,
    action: entry.action,
    actor: { name: entry.user.name, email: entry.user.email, role: entry.user.role },
    resource: { type: entry.resourceType, name: entry.resource },
    ipAddress: entry.ipAddress,
    userAgent: entry.userAgent,
    details,
    changes: entry.changes,
    errorMessage: null,
  };
}

export function rowOfDetailedEntry(entry: AuditDetailedEntry): Row {
  return {
    ...additions(entry),
    id: entry.id,
    timestamp: entry.timestamp,
    action: entry.action,
    actor: entry.user,
    resource: entry.resource,
    ipAddress: entry.ipAddress ?? '',
    userAgent: entry.userAgent ?? '',
    details: entry.details,
    changes: changesOf(entry.details),
    errorMessage: entry.errorMessage,
  };
}

function additions(entry: Additions): Additions {
  const { orgId, seq, actorType, actorHostname, category, result } = entry;
  return { orgId, seq, actorType, actorHostname, category, result };
}

export interface ChangedField {
  field: string;
  before: string;
  after: string;
  kind: 'added' | 'removed' | 'changed' | 'unchanged';
}

/** A value as text; a list or an object as JSON with a space after each of its commas, so a narrow column wraps it there. */
function shown(value: unknown): string {
  if (value === undefined || value === null) return '';
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) return `[${value.map((item) => JSON.stringify(item)).join(', ')}]`;
  if (typeof value === 'object')
    return `{${Object.entries(value)
      .map(([key, item]) => `${JSON.stringify(key)}: ${JSON.stringify(item)}`)
      .join(', ')}}`;
  return JSON.stringify(value);
}
const present = (value: unknown) => value !== undefined && value !== null;

function changeKind(before: unknown, after: unknown): ChangedField['kind'] {
  if (!present(before) && present(after)) return 'added';
  if (present(before) && !present(after)) return 'removed';
  return JSON.stringify(before) === JSON.stringify(after) ? 'unchanged' : 'changed';
}

/** The fields of a before/after pair in alphabetical order (jsonb keeps its own), each with its two values as text and how it changed. */
export function changedFields(changes: { before: Json; after: Json }): ChangedField[] {
  const fields = [...new Set([...Object.keys(changes.before), ...Object.keys(changes.after)])].sort((a, b) =>
    a.localeCompare(b),
  );
  return fields.map((field) => ({
    field,
    before: shown(changes.before[field]),
    after: shown(changes.after[field]),
    kind: changeKind(changes.before[field], changes.after[field]),
  }));
}
