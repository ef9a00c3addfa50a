/** The flags of `npm run cost`: one per field of the model's inputs, named as the field in kebab case. */
import { parseArgs } from 'node:util';
import { type CostInputs, defaultInputs } from './model.ts';

/** A flag the command refuses, with the reason. */
export class UsageError extends Error {}

const choices: Partial<Record<keyof CostInputs, readonly string[]>> = {
  heartbeatTransport: ['http', 'websocket'],
  tracing: ['sampled', 'all', 'off'],
  auroraStorage: ['standard', 'io-optimized'],
};

const kebab = (name: string) => name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
const fields = ['devices', ...Object.keys(defaultInputs)] as (keyof CostInputs)[];

export const usage = `usage: npm run cost -- --devices <n> [--<flag> <value> ...] [--operations <file>] [--help]

Prints the monthly AWS bill of <n> devices (docs/operations.md "Cost model"). Flags and their defaults:
${fields
  .filter((field) => field !== 'devices')
  .map(
    (field) =>
      `  --${kebab(field)} ${choices[field]?.join('|') ?? '<number>'} (default ${defaultInputs[field as keyof typeof defaultInputs]})`,
  )
  .join('\n')}
  --operations <file>  per-operation figures (default tools/cost/operations.json, written by npm run bench:cost)`;

/** The model's inputs from the command line; a UsageError names what is wrong. */
export function parseCostArgs(argv: string[]): { inputs: CostInputs; operationsFile?: string } | { help: true } {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        ...Object.fromEntries(fields.map((field) => [kebab(field), { type: 'string' as const }])),
        operations: { type: 'string' },
        help: { type: 'boolean' },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
  if (values.help) return { help: true };
  if (values.devices === undefined) throw new UsageError('--devices <n> is required');
  const inputs: Record<string, unknown> = { ...defaultInputs };
  for (const field of fields) {
    const text = values[kebab(field)];
    if (typeof text !== 'string') continue;
    const allowed = choices[field];
    if (allowed) {
      if (!allowed.includes(text)) throw new UsageError(`--${kebab(field)} takes ${allowed.join(' or ')}, not ${text}`);
      inputs[field] = text;
      continue;
    }
    const n = Number(text.replaceAll('_', '').replaceAll(',', ''));
    if (text.trim() === '' || !Number.isFinite(n) || n < 0)
      throw new UsageError(`--${kebab(field)} takes a number of 0 or more, not ${text}`);
    if (field === 'watchedMetricsShare' && n > 1)
      throw new UsageError(`--watched-metrics-share takes a share from 0 to 1, not ${text}`);
    if (field === 'devices' && (!Number.isInteger(n) || n < 1))
      throw new UsageError(`--devices takes a whole number of 1 or more, not ${text}`);
    inputs[field] = n;
  }
  return {
    inputs: inputs as unknown as CostInputs,
    operationsFile: typeof values.operations === 'string' ? values.operations : undefined,
  };
}
