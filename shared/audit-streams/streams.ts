import { randomBytes, randomUUID } from 'node:crypto';
import { changedFields } from '../audit/changes.ts';
import { auditOwnedChange } from '../audit/partner-audit.ts';
import type { AuditRow } from '../audit/row.ts';
import { type AuditContext, auditChange } from '../audit/writer.ts';
import { sealSecret } from '../auth/key-seal.ts';
import type { Principal } from '../auth/principal.ts';
import { reachableOrganization } from '../auth/reachable-organization.ts';
import { assertReachable, requirePermission } from '../auth/tenancy.ts';
import type { Db, Tx } from '../db/db.ts';
import type { Page } from '../db/page.ts';
import { Forbidden, ValidationFailed } from '../errors.ts';
import { logger } from '../logger.ts';
import { configurationProblem } from '../outbound/address.ts';
import { armDelivery, destinationCreated } from './arm.ts';
import { openedSecret, sendRecords } from './delivery.ts';
import { renderRecord, type StreamRecord, streamFormats } from './formats.ts';
import {
  type CreateStream,
  endpointUrl,
  type OrganizationStatus,
  type StreamSource,
  type StreamType,
  typedProblems,
  type UpdateStream,
} from './schemas.ts';
import * as store from './store.ts';

/** Audit destinations hold where the trail goes: managed with audit:manage. */
const manage = (principal: Principal) => requirePermission(principal, 'audit:manage');

const invalid = (field: string, message: string) =>
  ValidationFailed(message, [{ path: `body.${field}`, message, code: 'custom' }]);

/**
 * The endpoint checked with what its name resolves to now (the schema checked its text); each delivery checks again.
 * An S3 bucket must be one the stack lets the worker write to (AUDIT_STREAM_BUCKETS, from its auditStreamBuckets
 * setting); outside Lambda (npm start, tests) any bucket of the configured endpoint is taken.
 */
async function assertOutbound(type: StreamType, endpoint: string): Promise<void> {
  if (type === 's3') {
    const bucket = endpoint.split('/')[0]!;
    const allowed = (process.env.AUDIT_STREAM_BUCKETS ?? '').split(',').filter(Boolean);
    if (process.env.AWS_LAMBDA_FUNCTION_NAME && !allowed.includes(bucket))
      throw invalid(
        'endpoint',
        `Refused endpoint: the bucket ${bucket} is not among the deployment's auditStreamBuckets (${allowed.join(', ') || 'none'})`,
      );
    return;
  }
  const url = endpointUrl(type, endpoint);
  if (url === undefined) return;
  const problem = await configurationProblem(url);
  if (problem) throw invalid('endpoint', `Refused endpoint: ${problem}`);
}

function storedSecret(secret: string): store.StoredSecret {
  const sealed = sealSecret(secret);
  if (sealed) return { secret: sealed, sealed: true };
  logger.warn('ENROLLMENT_KEY_SEAL_KEY is not set: an audit stream secret is stored in the clear');
  return { secret, sealed: false };
}

const generatedSecret = () => randomBytes(32).toString('base64url');

/** Who owns a new destination: one reachable organization, or the caller's partner (partner users and the platform). */
async function ownerOf(db: Db, principal: Principal, input: CreateStream) {
  if (input.orgId) {
    const org = await reachableOrganization(db, principal, input.orgId, 'audit:manage');
    return { partnerId: org.partnerId as string, orgId: input.orgId };
  }
  manage(principal);
  if (principal.scope === 'organization') throw Forbidden('A partner destination is managed by partner users');
  const partnerId = principal.scope === 'platform' ? input.partnerId : principal.partnerId;
  if (!partnerId) throw invalid('partnerId', 'Platform callers name the partner of a partner destination');
  return { partnerId, orgId: null };
}

function auditStream(tx: Tx, audit: AuditContext, stream: store.StreamRow, action: string, details: object) {
  const event = {
    action,
    resourceType: 'audit_stream',
    resourceId: stream.id,
    resourceName: stream.name,
    details: details as Record<string, unknown>,
  };
  return auditOwnedChange(tx, audit, stream, event);
}

const shown = (stream: store.StreamRow) => ({
  name: stream.name,
  type: stream.type,
  format: stream.format,
  endpoint: stream.endpoint,
  streams: stream.streams,
  filter: stream.filter,
});

export async function createStream(db: Db, principal: Principal, input: CreateStream, audit: AuditContext) {
  const owner = await ownerOf(db, principal, input);
  await assertOutbound(input.type, input.endpoint);
  const generated = input.type === 'https' && input.secret === undefined ? generatedSecret() : undefined;
  const secret = input.secret ?? generated;
  const created = await db.transaction(async (tx) => {
    const row = await store.insertStream(
      tx,
      {
        ...owner,
        name: input.name,
        type: input.type,
        format: input.format,
        endpoint: input.endpoint,
        caCertificate: input.caCertificate ?? null,
        streams: input.streams,
        filter: input.filter,
      },
      secret === undefined ? null : storedSecret(secret),
    );
    await store.insertCursors(tx, row, row.streams, input.fromSeq);
    await auditStream(tx, audit, row, 'audit_stream.create', {
      after: shown(row),
      fromSeq: input.fromSeq ?? null,
      secretGenerated: generated !== undefined,
    });
    return row;
  });
  destinationCreated();
  // A destination from an earlier seq has rows to deliver already.
  if (input.fromSeq !== undefined) await armDelivery(await store.selectServedOrganizations(db, created));
  return generated === undefined ? created : { ...created, secret: generated };
}

export function listStreams(db: Db, principal: Principal, page: Page) {
  manage(principal);
  return store.selectStreams(db, principal, page);
}

export async function getStream(db: Db, principal: Principal, id: string) {
  manage(principal);
  return assertReachable(await store.selectStream(db, principal, id), 'Audit stream');
}

export async function updateStream(
  db: Db,
  principal: Principal,
  id: string,
  change: UpdateStream,
  audit: AuditContext,
) {
  const before = await getStream(db, principal, id);
  const problem = typedProblems({ ...change, type: before.type })[0];
  if (problem) throw invalid(problem.field, problem.message);
  if (change.endpoint !== undefined) await assertOutbound(before.type, change.endpoint);
  const { secret, rotateSecret, ...fields } = change;
  const generated = rotateSecret ? generatedSecret() : undefined;
  const newSecret = secret ?? generated;
  const updated = await db.transaction(async (tx) => {
    const row = await store.updateStreamRow(
      tx,
      id,
      fields,
      newSecret === undefined ? undefined : storedSecret(newSecret),
    );
    // A stream the change adds starts at its head, as a new destination's do.
    const added = row.streams.filter((source) => !before.streams.includes(source));
    await store.insertCursors(tx, row, added, undefined);
    await auditStream(tx, audit, row, 'audit_stream.update', {
      ...changedFields(shown(before), shown(row), ['name', 'format', 'endpoint', 'streams', 'filter']),
      secretChanged: newSecret !== undefined,
      caCertificateChanged: change.caCertificate !== undefined,
    });
    return row;
  });
  return generated === undefined ? updated : { ...updated, secret: generated };
}

/** Soft delete: nothing more is sent; its cursors stay with it. */
export async function deleteStream(db: Db, principal: Principal, id: string, audit: AuditContext) {
  const stream = await getStream(db, principal, id);
  await db.transaction(async (tx) => {
    await store.softDeleteStream(tx, id);
    await auditStream(tx, audit, stream, 'audit_stream.delete', {});
  });
}

const cursorStatus = (row: store.CursorStatus) => ({
  lastDeliveredSeq: row.lastDeliveredSeq,
  lastDeliveredAt: row.lastDeliveredAt,
  lagRows: row.lagRows,
  lagSeconds: row.lagRows === 0 ? 0 : Math.round(row.lagSeconds * 1000) / 1000,
  nextAttemptAt: row.nextAttemptAt,
  ...(row.lastError !== null && { lastError: row.lastError }),
});

/**
 * Each organization's status: the audit trail's cursor in the fields of the organization (as before any other stream
 * existed), and every stream the destination receives in `streams`.
 */
function toStatuses(stream: store.StreamRow, rows: store.CursorStatus[]): OrganizationStatus[] {
  const byOrg = new Map<string, store.CursorStatus[]>();
  for (const row of rows) byOrg.set(row.orgId, [...(byOrg.get(row.orgId) ?? []), row]);
  return [...byOrg].map(([orgId, cursors]) => ({
    orgId,
    ...cursorStatus(cursors.find((cursor) => cursor.source === 'audit')!),
    streams: cursors
      .filter((cursor) => stream.streams.includes(cursor.source))
      .map((cursor) => ({ stream: cursor.source, ...cursorStatus(cursor) })),
  }));
}

export async function streamStatus(db: Db, principal: Principal, id: string) {
  const stream = await getStream(db, principal, id);
  return { organizations: toStatuses(stream, await store.selectCursorStatus(db, stream)) };
}

/** Delivers again from `fromSeq` on, in the organization the destination serves; answers its status then. */
export async function replayStream(
  db: Db,
  principal: Principal,
  id: string,
  input: { orgId: string; fromSeq: number; stream: StreamSource },
  audit: AuditContext,
) {
  const stream = await getStream(db, principal, id);
  const served = await store.selectServedOrganizations(db, stream);
  if (!served.includes(input.orgId)) throw invalid('orgId', 'The destination does not serve this organization');
  if (!stream.streams.includes(input.stream))
    throw invalid('stream', `The destination does not receive the ${input.stream} stream`);
  const status = await db.transaction(async (tx) => {
    await store.replayCursor(tx, { streamId: id, orgId: input.orgId, source: input.stream }, input.fromSeq);
    await auditChange(tx, audit, {
      orgId: input.orgId,
      action: 'audit_stream.replay',
      resourceType: 'audit_stream',
      resourceId: stream.id,
      resourceName: stream.name,
      details: { fromSeq: input.fromSeq, stream: input.stream },
    });
    // Read before the delivery is armed: the answer is where the replay starts, not how far it got since.
    return toStatuses(stream, await store.selectCursorStatus(tx, stream, input.orgId))[0]!;
  });
  await armDelivery([input.orgId]);
  return status;
}

/** The record a test sends: shaped as an audit row, at seq 0 (no row of the chain has it), so a receiver can tell. */
function testRecord(stream: store.StreamRow, orgId: string): StreamRecord {
  const row: AuditRow = {
    id: randomUUID(),
    orgId,
    seq: 0,
    timestamp: new Date().toISOString().replace(/Z$/, '000Z'),
    actorType: 'system',
    actorId: '00000000-0000-0000-0000-000000000000',
    actorEmail: null,
    action: 'audit_stream.test',
    resourceType: 'audit_stream',
    resourceId: stream.id,
    resourceName: stream.name,
    details: '{"test": true}',
    ipAddress: null,
    userAgent: null,
    result: 'success',
    errorMessage: null,
    prevChecksum: null,
    checksum: '0'.repeat(64),
  };
  return { type: 'audit', row };
}

/** Sends one test record to the destination now; answers it rendered in the destination's format and in every format. */
export async function testStream(db: Db, principal: Principal, id: string) {
  const stream = await getStream(db, principal, id);
  const orgId = stream.orgId ?? (await store.selectServedOrganizations(db, stream))[0] ?? stream.partnerId;
  const record = testRecord(stream, orgId);
  let error: string | undefined;
  try {
    const deliverable = (await store.selectDeliverableStream(db, stream.id))!;
    await sendRecords(deliverable, await openedSecret(db, deliverable), [record]);
  } catch (failure) {
    error = failure instanceof Error ? failure.message : String(failure);
  }
  const lines = Object.fromEntries(streamFormats.map((format) => [format, renderRecord(record, format)])) as Record<
    (typeof streamFormats)[number],
    string
  >;
  return {
    format: stream.format,
    line: lines[stream.format],
    lines,
    delivered: error === undefined,
    ...(error !== undefined && { error }),
  };
}
