import { setFieldValues } from '#shared/custom-fields/bulk-values.ts';
import {
  createDefinition,
  deleteDefinition,
  getDefinition,
  listDefinitions,
  updateDefinition,
} from '#shared/custom-fields/definitions.ts';
import { commitDefinitionsImport, previewDefinitionsImport } from '#shared/custom-fields/import-definitions.ts';
import { commitValuesImport, previewValuesImport } from '#shared/custom-fields/import-values.ts';
import * as fields from '#shared/custom-fields/schemas.ts';
import { clearDeviceValue, setAgentValue, setDeviceValue } from '#shared/custom-fields/values.ts';
import { appDb } from '#shared/db/client.ts';
import { route } from '#shared/http/route.ts';

/** The routes of custom-fields, each with the one domain call answering it. */
export const routes = {
  // Custom fields (docs: README "Custom fields"): read with devices:read, written with devices:write;
  // partner-wide definitions (no orgId) only by partner and platform users. Audited as custom_field.create, .update
  // and .delete on the owning organization, or on every organization of the partner for a partner-wide one.
  'POST /api/v1/custom-fields': route(
    {
      operationId: 'customFieldsDefinitionsCreate',
      auth: 'userOrApiKey',
      tag: 'custom-fields',
      summary:
        "Create a custom field definition: an organization's (orgId) or partner-wide (without it); a key a visible definition holds is 409 CONFLICT naming it",
      body: fields.createDefinition,
      status: 201,
      response: fields.definition,
      errors: [400, 401, 403, 404, 409],
    },
    ({ caller, body, audit }) => createDefinition(appDb(), caller, body, audit),
  ),
  'GET /api/v1/custom-fields': route(
    {
      operationId: 'customFieldsDefinitionsList',
      auth: 'userOrApiKey',
      tag: 'custom-fields',
      summary: 'The custom field definitions the caller sees, by key (devices:read)',
      query: fields.listDefinitionsQuery,
      response: fields.definitionPage,
      errors: [400, 401, 403, 404],
    },
    ({ caller, query }) => listDefinitions(appDb(), caller, query),
  ),
  'GET /api/v1/custom-fields/{fieldId}': route(
    {
      operationId: 'customFieldsDefinitionsGet',
      auth: 'userOrApiKey',
      tag: 'custom-fields',
      summary: 'Get a custom field definition (devices:read)',
      params: fields.fieldParams,
      response: fields.definition,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params }) => getDefinition(appDb(), caller, params.fieldId),
  ),
  'PATCH /api/v1/custom-fields/{fieldId}': route(
    {
      operationId: 'customFieldsDefinitionsUpdate',
      auth: 'userOrApiKey',
      tag: 'custom-fields',
      summary:
        'Change a custom field definition (devices:write); its type only while it holds no values (409 otherwise)',
      params: fields.fieldParams,
      body: fields.updateDefinition,
      response: fields.definition,
      errors: [400, 401, 403, 404, 409],
    },
    ({ caller, params, body, audit }) => updateDefinition(appDb(), caller, params.fieldId, body, audit),
  ),
  'DELETE /api/v1/custom-fields/{fieldId}': route(
    {
      operationId: 'customFieldsDefinitionsDelete',
      auth: 'userOrApiKey',
      tag: 'custom-fields',
      summary:
        'Delete a custom field definition (devices:write); one holding values needs ?force=true (409 otherwise) and its values go with it',
      params: fields.fieldParams,
      query: fields.deleteDefinitionQuery,
      status: 204,
      errors: [400, 401, 403, 404, 409],
    },
    ({ caller, params, query, audit }) => deleteDefinition(appDb(), caller, params.fieldId, query.force, audit),
  ),
  'POST /api/v1/custom-fields/import/definitions/preview': route(
    {
      operationId: 'customFieldsImportDefinitionsPreview',
      auth: 'userOrApiKey',
      tag: 'custom-fields',
      summary:
        "Import wizard, pass 1: another RMM's field list (Datto RMM UDFs, NinjaOne, ConnectWise Automate EDFs, generic CSV) as partner-wide definitions, each with its proposed key and type and any collision; stores nothing",
      body: fields.definitionsImport,
      maxBodyBytes: 6 * 1024 * 1024,
      response: fields.definitionsImportReply,
      errors: [400, 401, 403, 404, 413],
    },
    ({ caller, body }) => previewDefinitionsImport(appDb(), caller, body),
  ),
  'POST /api/v1/custom-fields/import/definitions': route(
    {
      operationId: 'customFieldsImportDefinitionsCommit',
      auth: 'userOrApiKey',
      tag: 'custom-fields',
      summary:
        'Import wizard, pass 1: create or update the definitions, idempotent on (sourceSystem, externalId); rows whose status changed since preview are refused; one summary audit row',
      body: fields.definitionsImport,
      maxBodyBytes: 6 * 1024 * 1024,
      response: fields.definitionsImportReply,
      errors: [400, 401, 403, 404, 413],
    },
    ({ caller, body, audit }) => commitDefinitionsImport(appDb(), caller, body, audit),
  ),
  'POST /api/v1/custom-fields/import/values/preview': route(
    {
      operationId: 'customFieldsImportValuesPreview',
      auth: 'userOrApiKey',
      tag: 'custom-fields',
      summary:
        'Import wizard, pass 2: up to 10,000 device rows resolved (mapped device id, serial number, hostname) and each field derived: set, unchanged, invalid, no-device, ambiguous, no-definition; stores nothing',
      body: fields.valuesImport,
      maxBodyBytes: 6 * 1024 * 1024,
      response: fields.valuesImportReply,
      errors: [400, 401, 403, 404, 413],
    },
    ({ caller, body }) => previewValuesImport(appDb(), caller, body),
  ),
  'POST /api/v1/custom-fields/import/values': route(
    {
      operationId: 'customFieldsImportValuesCommit',
      auth: 'userOrApiKey',
      tag: 'custom-fields',
      summary:
        'Import wizard, pass 2: apply the set fields in transactions of about 5,000 values (resumable, idempotent); rows whose digest changed since preview are refused; device.update per device and one summary row per pass (a file sent as several requests names the pass)',
      body: fields.valuesImport,
      maxBodyBytes: 6 * 1024 * 1024,
      response: fields.valuesImportReply,
      errors: [400, 401, 403, 404, 413],
    },
    ({ caller, body, audit }) => commitValuesImport(appDb(), caller, body, audit),
  ),
  'PUT /api/v1/custom-fields/{fieldId}/values': route(
    {
      operationId: 'customFieldsValuesBulkPut',
      auth: 'userOrApiKey',
      tag: 'custom-fields',
      summary:
        'Set (or clear, with null) one custom field on up to 1,000 devices (devices:write): every item validated before anything is written (400 naming the item), a device the caller does not reach is 404; one device.update row with before and after per changed device, nothing for an unchanged one',
      params: fields.fieldParams,
      body: fields.bulkValues,
      maxBodyBytes: 6 * 1024 * 1024,
      response: fields.bulkValuesReply,
      errors: [400, 401, 403, 404, 413],
    },
    ({ caller, params, body, audit }) => setFieldValues(appDb(), caller, params.fieldId, body, audit),
  ),
  'PUT /api/v1/devices/{id}/custom-fields/{key}': route(
    {
      operationId: 'customFieldsValuesPut',
      auth: 'userOrApiKey',
      tag: 'custom-fields',
      summary:
        "Set a device's custom field value, validated against its definition and never coerced (devices:write); audited as device.update with before and after",
      params: fields.deviceFieldParams,
      body: fields.putValue,
      response: fields.deviceFieldValue,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, body, audit }) => setDeviceValue(appDb(), caller, params.id, params.key, body.value, audit),
  ),
  'DELETE /api/v1/devices/{id}/custom-fields/{key}': route(
    {
      operationId: 'customFieldsValuesDelete',
      auth: 'userOrApiKey',
      tag: 'custom-fields',
      summary:
        "Clear a device's custom field value (devices:write); a required field's is 409; audited as device.update",
      params: fields.deviceFieldParams,
      status: 204,
      errors: [400, 401, 403, 404, 409],
    },
    ({ caller, params, audit }) => clearDeviceValue(appDb(), caller, params.id, params.key, audit),
  ),
  'PUT /api/v1/agents/{id}/custom-fields/{key}': route(
    {
      operationId: 'customFieldsAgentValuesPut',
      auth: 'agent',
      tag: 'custom-fields',
      summary:
        "A script on the device sets a custom field of its own device: scriptWritable fields only (403 otherwise); 429 RATE_LIMITED beyond the device's hourly budget; audited as device.update with the agent as actor",
      params: fields.agentFieldParams,
      body: fields.putValue,
      maxBodyBytes: 64 * 1024,
      response: fields.deviceFieldValue,
      errors: [400, 401, 403, 404, 413, 429],
    },
    ({ caller, params, body, audit }) => setAgentValue(appDb(), caller, params.id, params.key, body.value, audit),
  ),
} as const;
