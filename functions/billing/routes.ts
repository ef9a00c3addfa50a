import {
  changeContractState,
  createContract,
  getContract,
  listContracts,
  updateContract,
} from '#shared/billing/contracts.ts';
import { type BillingFile, exportInvoices, invoiceDocument, statementDocument } from '#shared/billing/documents.ts';
import { estimateInvoice, generateInvoice, issueInvoice, listInvoices, voidInvoice } from '#shared/billing/invoices.ts';
import { updateBillingProfile } from '#shared/billing/profile.ts';
import * as billing from '#shared/billing/schemas.ts';
import { appDb } from '#shared/db/client.ts';
import { RawReply, route } from '#shared/http/route.ts';

/** A billing file as an attachment; a PDF travels base64-encoded, as API Gateway carries binary bodies. */
function attachment(file: BillingFile): RawReply {
  const binary = Buffer.isBuffer(file.body);
  return new RawReply({
    statusCode: 200,
    headers: { 'content-type': file.contentType, 'content-disposition': `attachment; filename="${file.filename}"` },
    body: binary ? (file.body as Buffer).toString('base64') : (file.body as string),
    isBase64Encoded: binary,
  });
}

/** A document in JSON is the route's ordinary reply; in another format it is a file. */
function asReply<T>(result: T): Exclude<T, BillingFile> | RawReply {
  const file = result as BillingFile;
  return typeof file.contentType === 'string' && typeof file.filename === 'string'
    ? attachment(file)
    : (result as Exclude<T, BillingFile>);
}

const contractState = (action: 'pause' | 'resume' | 'cancel', summary: string) =>
  route(
    {
      operationId: `billingContracts${action[0]!.toUpperCase()}${action.slice(1)}`,
      auth: 'user',
      tag: 'billing',
      summary,
      params: billing.contractParams,
      body: billing.contractAction,
      response: billing.contract,
      errors: [400, 401, 403, 404, 409],
    },
    ({ caller, params, audit }) => changeContractState(appDb(), caller, params.id, action, audit),
  );

/** The routes of billing: contracts, invoices, usage statements, exports and the partner's billing profile. */
export const routes = {
  'POST /api/v1/orgs/organizations/{id}/contracts': route(
    {
      operationId: 'billingContractsCreate',
      auth: 'user',
      tag: 'billing',
      summary: 'Create a contract for the organization with its lines (billing:manage); amounts are decimal strings',
      params: billing.orgParams,
      body: billing.createContract,
      status: 201,
      response: billing.contract,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, body, audit }) => createContract(appDb(), caller, params.id, body, audit),
  ),
  'GET /api/v1/orgs/organizations/{id}/contracts': route(
    {
      operationId: 'billingContractsList',
      auth: 'user',
      tag: 'billing',
      summary: "The organization's contracts with their lines and next period (billing:read)",
      params: billing.orgParams,
      query: billing.listContractsQuery,
      response: billing.contractPage,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, query }) => listContracts(appDb(), caller, params.id, query),
  ),
  'GET /api/v1/contracts/{id}': route(
    {
      operationId: 'billingContractsGet',
      auth: 'user',
      tag: 'billing',
      summary: 'Get a contract (billing:read)',
      params: billing.contractParams,
      response: billing.contract,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params }) => getContract(appDb(), caller, params.id),
  ),
  'PATCH /api/v1/contracts/{id}': route(
    {
      operationId: 'billingContractsUpdate',
      auth: 'user',
      tag: 'billing',
      summary:
        'Change a contract (billing:manage): end date, terms, auto-renew and auto-issue, tax rate, its lines (replacing all), or activate a draft',
      params: billing.contractParams,
      body: billing.updateContract,
      response: billing.contract,
      errors: [400, 401, 403, 404, 409],
    },
    ({ caller, params, body, audit }) => updateContract(appDb(), caller, params.id, body, audit),
  ),
  'POST /api/v1/contracts/{id}/pause': contractState('pause', 'Pause an active contract from today (billing:manage)'),
  'POST /api/v1/contracts/{id}/resume': contractState(
    'resume',
    'Resume a paused contract from today (billing:manage); periods that fell due meanwhile are billed by the next run',
  ),
  'POST /api/v1/contracts/{id}/cancel': contractState('cancel', 'Cancel a contract: it ends today (billing:manage)'),
  'GET /api/v1/contracts/{id}/estimate': route(
    {
      operationId: 'billingContractsEstimate',
      auth: 'user',
      tag: 'billing',
      summary: "What a period (by default today's) would bill now, stored nowhere (billing:read)",
      params: billing.contractParams,
      query: billing.estimateQuery,
      response: billing.estimate,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, query }) => estimateInvoice(appDb(), caller, params.id, query.period),
  ),
  'POST /api/v1/contracts/{id}/invoices': route(
    {
      operationId: 'billingInvoicesGenerate',
      auth: 'user',
      tag: 'billing',
      summary:
        'Generate the invoice of a period (billing:manage): a draft, recomputed by each later generate until issued; an issued one is answered as it is',
      params: billing.contractParams,
      body: billing.generateInvoice,
      status: 201,
      response: billing.invoice,
      errors: [400, 401, 403, 404, 409],
    },
    ({ caller, params, body, audit }) => generateInvoice(appDb(), caller, params.id, body.periodStart, audit),
  ),
  'GET /api/v1/invoices': route(
    {
      operationId: 'billingInvoicesList',
      auth: 'userOrApiKey',
      tag: 'billing',
      summary:
        "Invoices the caller reaches, newest period first, by organization, contract and status (billing:read; an organization's users: its issued invoices)",
      query: billing.listInvoicesQuery,
      response: billing.invoicePage,
      errors: [400, 401, 403],
    },
    ({ caller, query }) => listInvoices(appDb(), caller, query),
  ),
  'GET /api/v1/invoices/export': route(
    {
      operationId: 'billingInvoicesExport',
      auth: 'user',
      tag: 'billing',
      summary: 'Issued invoices and credit notes by issue date as Xero or QuickBooks Online import them (billing:read)',
      query: billing.exportQuery,
      download: { textTypes: ['text/csv'] },
      errors: [400, 401, 403],
    },
    async ({ caller, query }) => attachment(await exportInvoices(appDb(), caller, query)),
  ),
  'GET /api/v1/invoices/{id}': route(
    {
      operationId: 'billingInvoicesGet',
      auth: 'userOrApiKey',
      tag: 'billing',
      summary: 'Get an invoice; format=csv or format=pdf downloads it',
      params: billing.invoiceParams,
      query: billing.invoiceFormatQuery,
      download: { textTypes: ['text/csv', 'application/pdf'], jsonReply: true },
      response: billing.invoice,
      errors: [400, 401, 403, 404],
    },
    async ({ caller, params, query }) => asReply(await invoiceDocument(appDb(), caller, params.id, query.format)),
  ),
  'POST /api/v1/invoices/{id}/issue': route(
    {
      operationId: 'billingInvoicesIssue',
      auth: 'user',
      tag: 'billing',
      summary: 'Issue a draft (billing:manage): numbered without gaps per partner and year, e.g. 2026-000042',
      params: billing.invoiceParams,
      body: billing.invoiceAction,
      response: billing.invoice,
      errors: [400, 401, 403, 404, 409],
    },
    ({ caller, params, audit }) => issueInvoice(appDb(), caller, params.id, audit),
  ),
  'POST /api/v1/invoices/{id}/void': route(
    {
      operationId: 'billingInvoicesVoid',
      auth: 'user',
      tag: 'billing',
      summary:
        'Void an invoice with a reason (billing:manage); an issued one is cancelled by a credit note referencing it',
      params: billing.invoiceParams,
      body: billing.voidInvoice,
      response: billing.invoice,
      errors: [400, 401, 403, 404, 409],
    },
    ({ caller, params, body, audit }) => voidInvoice(appDb(), caller, params.id, body.reason, audit),
  ),
  'GET /api/v1/invoices/{id}/usage-statement': route(
    {
      operationId: 'billingInvoicesUsageStatement',
      auth: 'userOrApiKey',
      tag: 'billing',
      summary:
        "The invoice's usage statement: each device with its counted days and the audit chain head at generation; format=csv downloads it",
      params: billing.invoiceParams,
      query: billing.statementFormatQuery,
      download: { textTypes: ['text/csv'], jsonReply: true },
      response: billing.usageStatement,
      errors: [400, 401, 403, 404],
    },
    async ({ caller, params, query }) => asReply(await statementDocument(appDb(), caller, params.id, query.format)),
  ),
  'PATCH /api/v1/partners/{partnerId}/billing-profile': route(
    {
      operationId: 'billingProfileUpdate',
      auth: 'user',
      tag: 'billing',
      summary: "The name, address, logo (a data: URL) and tax id the partner's invoices show (billing:manage)",
      params: billing.partnerParams,
      body: billing.billingProfileChange,
      response: billing.billingProfile,
      errors: [400, 401, 403, 404],
    },
    ({ caller, params, body, audit }) => updateBillingProfile(appDb(), caller, params.partnerId, body, audit),
  ),
} as const;
