/**
 * `npm run cost -- --devices <n> [--heartbeat-seconds 60] [--heartbeat-transport http|websocket] [--tracing off] ...`:
 * the monthly AWS bill of a fleet, line by line, from the figures `npm run bench:cost` measured
 * (tools/cost/operations.json) and the dated price table (tools/cost/prices.json). Exit 1 on a bad flag.
 */
import { readFileSync } from 'node:fs';
import { parseCostArgs, UsageError, usage } from './cost/flags.ts';
import { computeBill, formatBill, type MeasuredOperations, type Prices } from './cost/model.ts';

const beside = (name: string) => new URL(`./cost/${name}`, import.meta.url);
const readJson = <T>(file: URL | string): T => JSON.parse(readFileSync(file, 'utf8')) as T;

function main(): number {
  let parsed: ReturnType<typeof parseCostArgs>;
  try {
    parsed = parseCostArgs(process.argv.slice(2));
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    console.error(`cost: ${error.message}\n\n${usage}`);
    return 1;
  }
  if ('help' in parsed) {
    console.log(usage);
    return 0;
  }
  const { inputs, operationsFile } = parsed;
  const prices = readJson<Prices>(beside('prices.json'));
  const measured = readJson<MeasuredOperations>(operationsFile ?? beside('operations.json'));
  const bill = computeBill(inputs, measured, prices);
  console.log(
    `Logbook's monthly AWS bill for ${inputs.devices.toLocaleString('en-US')} devices: ${prices.region} list prices of ${prices.asOf}, per-operation figures measured ${measured.measuredAt} (${measured.where}).
Agent: heartbeat every ${inputs.heartbeatSeconds} s over ${inputs.heartbeatTransport}, ${inputs.logEntriesPerDay} log entries in ${inputs.logUploadsPerDay} uploads, ${inputs.eventLogEntriesPerDay} events in ${inputs.eventLogSubmissionsPerDay} submissions, ${inputs.postureUploadsPerDay} posture and ${inputs.metricsUploadsPerDay} metrics uploads a day; tracing ${inputs.tracing}.`,
  );
  for (const [key, batch] of Object.entries(bill.batches))
    console.log(`${key}: recorded in batches of ${batch.toFixed(1)} by the heartbeat queue's worker.`);
  for (const note of bill.estimated) console.log(`Estimated, not measured: ${note}.`);
  console.log(formatBill(bill));
  return 0;
}

process.exitCode = main();
