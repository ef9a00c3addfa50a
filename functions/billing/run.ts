/**
 * The billing due run's Lambda, run daily by EventBridge as logbook_app: every contract with a period due by today in
 * its billing time zone gets the period's invoice (shared/billing/due-run.ts). A scheduled event carries no input; a
 * manual invocation may pass `{ "asOf": "<ISO 8601>" }` to run a day again. Fails (for the function's error metric
 * and alarm) when a contract could not be billed; the others are billed all the same.
 */
import { z } from 'zod';
import { runDueInvoices } from '#shared/billing/due-run.ts';
import { appDb } from '#shared/db/client.ts';
import { logger } from '#shared/logger.ts';
import { observedHandler } from '#shared/observability/handler.ts';
import { countMetric } from '#shared/observability/metrics.ts';

const invocation = z.object({ asOf: z.iso.datetime({ offset: true }).optional() });

export const handler = observedHandler(async (event: unknown) => {
  const input = invocation.parse(event ?? {});
  const run = await runDueInvoices(appDb(), { asOf: input.asOf === undefined ? undefined : new Date(input.asOf) });
  logger.info('[billing] Due run finished', { ...run });
  countMetric('InvoicesGenerated', run.generated);
  countMetric('InvoicesIssued', run.issued);
  countMetric('BillingRunFailures', run.failed);
  if (run.failed > 0) throw new Error(`billing: ${run.failed} contract(s) could not be billed`);
  return run;
});
