import * as streams from '#shared/audit-streams/schemas.ts';
import {
  createStream,
  deleteStream,
  getStream,
  listStreams,
  replayStream,
  streamStatus,
  testStream,
  updateStream,
} from '#shared/audit-streams/streams.ts';
import { listWitnessed } from '#shared/audit-streams/witness.ts';
import { appDb } from '#shared/db/client.ts';
import { route } from '#shared/http/route.ts';

/** The routes of audit streaming: destinations of the trail, their status and replays. */
export const routes = {
  'POST /api/v1/audit-streams': route(
    {
      operationId: 'auditStreamsCreate',
      // Seals the destination's secret.
      grants: ['seal-key'],
      auth: 'userOrApiKey',
      tag: 'audit-streams',
      summary:
        "Create a destination of the audit trail (audit:manage): one organization's (orgId) or the partner's (availability partner); it delivers the rows written after its creation, or from fromSeq",
      body: streams.createStream,
      status: 201,
      response: streams.auditStream,
      errors: [400, 401, 403, 404],
    },
    ({ caller, body, audit }) => createStream(appDb(), caller, body, audit),
  ),
  'GET /api/v1/audit-streams': route(
    {
      operationId: 'auditStreamsList',
      auth: 'userOrApiKey',
      tag: 'audit-streams',
      summary: 'The destinations of the audit trail the caller manages (audit:manage)',
      query: streams.listStreamsQuery,
      response: streams.auditStreamPage,
      errors: [400, 401, 403],
    },
    ({ caller, query }) => listStreams(appDb(), caller, query),
  ),
  'GET /api/v1/audit-streams/{id}': route(
    {
      operationId: 'auditStreamsGet',
      auth: 'userOrApiKey',
      tag: 'audit-streams',
      summary: 'Get a destination (its secret is never returned)',
      params: streams.streamParams,
      response: streams.auditStream,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params }) => getStream(appDb(), caller, params.id),
  ),
  'PATCH /api/v1/audit-streams/{id}': route(
    {
      operationId: 'auditStreamsUpdate',
      grants: ['seal-key'],
      auth: 'userOrApiKey',
      tag: 'audit-streams',
      summary: 'Change a destination (its type stays)',
      params: streams.streamParams,
      body: streams.updateStream,
      response: streams.auditStream,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, body, audit }) => updateStream(appDb(), caller, params.id, body, audit),
  ),
  'DELETE /api/v1/audit-streams/{id}': route(
    {
      operationId: 'auditStreamsDelete',
      auth: 'userOrApiKey',
      tag: 'audit-streams',
      summary: 'Delete a destination: nothing more is sent to it',
      params: streams.streamParams,
      status: 204,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, audit }) => deleteStream(appDb(), caller, params.id, audit),
  ),
  'POST /api/v1/audit-streams/{id}/test': route(
    {
      operationId: 'auditStreamsTest',
      // Opens the destination's secret to sign.
      grants: ['seal-key'],
      auth: 'userOrApiKey',
      tag: 'audit-streams',
      summary:
        "Send one test record (seq 0) to the destination now; answers it rendered in the destination's format, and in every format",
      params: streams.streamParams,
      response: streams.testReply,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params }) => testStream(appDb(), caller, params.id),
  ),
  'GET /api/v1/audit-streams/{id}/status': route(
    {
      operationId: 'auditStreamsStatus',
      auth: 'userOrApiKey',
      tag: 'audit-streams',
      summary:
        'Where the destination stands in each organization it serves: last delivered seq, lag in rows and seconds, last error',
      params: streams.streamParams,
      response: streams.streamStatus,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params }) => streamStatus(appDb(), caller, params.id),
  ),
  'POST /api/v1/audit-streams/{id}/replay': route(
    {
      operationId: 'auditStreamsReplay',
      auth: 'userOrApiKey',
      tag: 'audit-streams',
      summary: "Deliver an organization's rows again from fromSeq on (audit:manage); answers the organization's status",
      params: streams.streamParams,
      body: streams.replayBody,
      response: streams.organizationStatus,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, body, audit }) => replayStream(appDb(), caller, params.id, body, audit),
  ),
  'GET /api/v1/audit-logs/witness': route(
    {
      operationId: 'auditStreamsWitness',
      auth: 'userOrApiKey',
      tag: 'audit-streams',
      summary:
        "The organization's anchors as the outside witness holds them (audit:read), newest first, with the age of the newest",
      query: streams.witnessQuery,
      response: streams.witnessReply,
      errors: [400, 401, 403, 404],
    },
    ({ caller, query }) => listWitnessed(appDb(), caller, query.orgId),
  ),
};
