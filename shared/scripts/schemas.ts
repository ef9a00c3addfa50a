import { z } from 'zod';
import { actorReply, severities } from '../alerts/schemas.ts';
import { likePattern } from '../db/like-pattern.ts';
import { pageOf, pageQuery } from '../db/paging.ts';
import { timestampReply } from '../db/timestamp.ts';
import { nameText, optionalParam } from '../request-values.ts';

/** Limits of a script (docs/scripts.md). */
export const scriptLimits = {
  contentBytes: 256 * 1024,
  parameters: 50,
  choices: 100,
  defaultTimeoutSeconds: 300,
  maxTimeoutSeconds: 3600,
  tags: 20,
} as const;

export const languages = ['powershell', 'bash', 'python', 'cmd'] as const;
export const osTypes = ['windows', 'linux', 'macos'] as const;
export const runAsValues = ['system', 'user'] as const;
/** What an exit code may map to: an alert severity, or none. */
export const mappedSeverities = [...severities, 'none'] as const;
export type MappedSeverity = (typeof mappedSeverities)[number];
export const parameterTypes = ['string', 'number', 'boolean', 'select'] as const;

const timestamp = z.iso.datetime({ offset: true });
const name = nameText(255);
const parameterValue = z.union([z.string().max(10_000), z.number(), z.boolean()]);

/**
 * A declared parameter; a `secret` one's value never reaches a run record or the trail, and its `default`
 * is write-only: stored sealed, shown as `hasDefault`.
 */
export const scriptParameter = z
  .object({
    name: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]{0,63}$/, 'A parameter name is a letter or _ then up to 63 letters, digits or _'),
    type: z.enum(parameterTypes),
    description: z.string().max(1000).optional(),
    required: z.boolean().default(false),
    default: parameterValue.optional(),
    choices: z.array(z.string().min(1).max(255)).min(1).max(scriptLimits.choices).optional(),
    secret: z.boolean().default(false),
    hasDefault: z.boolean().optional().meta({
      description:
        'Secret parameters only, in replies: whether a default is set (its value is write-only, never returned). Sent back with `true` and no `default` on a change, the current default is kept',
    }),
  })
  .strict()
  .superRefine((p, ctx) => {
    if (p.type === 'select' && !p.choices)
      ctx.addIssue({ code: 'custom', path: ['choices'], message: 'A select parameter lists its choices' });
    if (p.type !== 'select' && p.choices)
      ctx.addIssue({ code: 'custom', path: ['choices'], message: 'Only a select parameter has choices' });
    if (p.default !== undefined && parameterIssue(p, p.default))
      ctx.addIssue({ code: 'custom', path: ['default'], message: parameterIssue(p, p.default)! });
  })
  .meta({ id: 'ScriptParameter' });
export type ScriptParameter = z.output<typeof scriptParameter>;

/** Why a value does not fit a declared parameter, or undefined when it does. */
export function parameterIssue(p: Pick<ScriptParameter, 'type' | 'choices'>, value: unknown): string | undefined {
  switch (p.type) {
    case 'string':
      return typeof value === 'string' && value.length <= 10_000
        ? undefined
        : 'Expected text (up to 10,000 characters)';
    case 'number':
      return typeof value === 'number' && Number.isFinite(value) ? undefined : 'Expected a number';
    case 'boolean':
      return typeof value === 'boolean' ? undefined : 'Expected true or false';
    case 'select':
      return typeof value === 'string' && p.choices?.includes(value)
        ? undefined
        : `Expected one of ${p.choices?.join(', ')}`;
  }
}

const parameters = z
  .array(scriptParameter)
  .max(scriptLimits.parameters)
  .superRefine((list, ctx) => {
    const seen = new Set<string>();
    list.forEach((p, index) => {
      if (seen.has(p.name.toLowerCase()))
        ctx.addIssue({ code: 'custom', path: [index, 'name'], message: `Parameter ${p.name} is declared twice` });
      seen.add(p.name.toLowerCase());
    });
  });

/** `{ "<exit code>": severity }`; codes not listed follow the default: 0 raises nothing, any other code `medium`. */
export const exitCodeSeverityMapping = z
  .record(z.string().regex(/^-?\d{1,10}$/, 'Keys are exit codes (whole numbers)'), z.enum(mappedSeverities))
  .refine((m) => Object.keys(m).length <= 256, 'At most 256 exit codes')
  .meta({ description: 'Exit code to severity; not listed: 0 raises nothing, any other code medium' });

const content = z
  .string()
  .min(1)
  .refine((text) => Buffer.byteLength(text) <= scriptLimits.contentBytes, 'Content is limited to 256 KB');

/** The fields of a script that a bundle carries too (no tenant identifiers). */
export const scriptFields = {
  name,
  description: z.string().max(10_000).default(''),
  language: z.enum(languages),
  osTypes: z
    .array(z.enum(osTypes))
    .min(1)
    .transform((list) => [...new Set(list)]),
  content,
  parameters: parameters.default([]),
  timeoutSeconds: z
    .number()
    .int()
    .min(1)
    .max(scriptLimits.maxTimeoutSeconds)
    .default(scriptLimits.defaultTimeoutSeconds)
    .meta({
      description: `Seconds, default ${scriptLimits.defaultTimeoutSeconds}, at most ${scriptLimits.maxTimeoutSeconds}`,
    }),
  runAs: z.enum(runAsValues).default('system').meta({ description: 'system, or the logged-on user' }),
  exitCodeSeverityMapping: exitCodeSeverityMapping.nullable().default(null),
  category: z.string().trim().min(1).max(100).nullable().default(null),
  tags: z
    .array(z.string().trim().min(1).max(50))
    .max(scriptLimits.tags)
    .default([])
    .transform((list) => [...new Set(list)]),
};
export const scriptDefinition = z.object(scriptFields).strict();
export type ScriptDefinition = z.output<typeof scriptDefinition>;

/** POST /scripts: an organization's script (`orgId`), or the partner's (`availability: "partner"`). */
export const createScript = z
  .object({
    ...scriptFields,
    availability: z.enum(['organization', 'partner']).optional(),
    orgId: z.uuid().optional(),
    partnerId: z.uuid().optional().meta({ description: 'Platform callers only: the partner of a partner script' }),
  })
  .strict()
  .superRefine((body, ctx) => {
    const partner = body.availability === 'partner';
    if (partner && body.orgId)
      ctx.addIssue({ code: 'custom', path: ['orgId'], message: 'A partner script belongs to no organization' });
    if (!partner && !body.orgId)
      ctx.addIssue({ code: 'custom', path: ['orgId'], message: 'Give orgId, or availability "partner"' });
  });
export type CreateScript = z.output<typeof createScript>;

export const updateScript = z
  .object({
    name: name.optional(),
    description: z.string().max(10_000).optional(),
    language: scriptFields.language.optional(),
    osTypes: scriptFields.osTypes.optional(),
    content: content.optional(),
    parameters: parameters.optional(),
    timeoutSeconds: z.number().int().min(1).max(scriptLimits.maxTimeoutSeconds).optional(),
    runAs: z.enum(runAsValues).optional(),
    exitCodeSeverityMapping: exitCodeSeverityMapping.nullable().optional(),
    category: z.string().trim().min(1).max(100).nullable().optional(),
    tags: z
      .array(z.string().trim().min(1).max(50))
      .max(scriptLimits.tags)
      .transform((list) => [...new Set(list)])
      .optional(),
  })
  .strict()
  .refine((body) => Object.keys(body).length > 0, 'Give at least one field to change');
export type UpdateScript = z.output<typeof updateScript>;

const summaryFields = {
  id: z.uuid(),
  partnerId: z.uuid(),
  orgId: z.uuid().nullable(),
  availability: z.enum(['organization', 'partner']),
  name: z.string(),
  description: z.string(),
  language: z.enum(languages),
  osTypes: z.array(z.enum(osTypes)),
  parameters: z.array(scriptParameter),
  timeoutSeconds: z.number().int(),
  runAs: z.enum(runAsValues),
  exitCodeSeverityMapping: z.record(z.string(), z.enum(mappedSeverities)).nullable(),
  category: z.string().nullable(),
  tags: z.array(z.string()),
  version: z.number().int(),
  createdAt: timestampReply,
  updatedAt: timestampReply,
};
export const scriptSummary = z.object(summaryFields).strict().meta({ id: 'ScriptSummary' });
export const script = z
  .object({ ...summaryFields, content: z.string() })
  .strict()
  .meta({ id: 'Script' });
export const scriptPage = pageOf(scriptSummary).meta({ id: 'ScriptPage' });

export const scriptVersion = z
  .object({
    version: z.number().int(),
    language: z.enum(languages),
    content: z.string(),
    parameters: z.array(scriptParameter),
    createdBy: z.uuid().nullable(),
    createdAt: timestampReply,
  })
  .strict()
  .meta({ id: 'ScriptVersion' });
export const scriptVersionPage = pageOf(scriptVersion).meta({ id: 'ScriptVersionPage' });

export const scriptParams = z.object({ scriptId: z.uuid() });
export const listScriptsQuery = z.object({
  ...pageQuery({ defaultLimit: 50, maxLimit: 200 }),
  orgId: optionalParam(z.uuid()).meta({
    description: "An organization's scripts and the partner scripts that serve it",
  }),
  availability: optionalParam(z.enum(['organization', 'partner'])),
  language: optionalParam(z.enum(languages)),
  category: optionalParam(z.string().max(100)),
  search: optionalParam(z.string().min(1).max(255).transform(likePattern)).meta({
    description: 'Case-insensitive substring of the name',
  }),
});
export type ListScriptsQuery = z.output<typeof listScriptsQuery>;
export const versionsQuery = z.object(pageQuery({ defaultLimit: 20, maxLimit: 100 }));

export const runItemStatuses = [
  'pending',
  'sent',
  'running',
  'completed',
  'failed',
  'timed-out',
  'expired',
  'cancelled',
] as const;
export type RunItemStatus = (typeof runItemStatuses)[number];

/** Devices one run reaches at most, by id or as a group's members. */
export const maxRunDevices = 5000;

/** POST /scripts/{scriptId}/runs: devices by id, or a device group's members at the time of the run. */
export const startRun = z
  .object({
    deviceIds: z
      .array(z.uuid())
      .min(1)
      .max(maxRunDevices)
      .transform((ids) => [...new Set(ids.map((id) => id.toLowerCase()))])
      .optional(),
    groupId: z.uuid().optional().meta({
      description: 'A device group whose members, static or matching its filter now, the run targets',
    }),
    parameters: z.record(z.string(), z.unknown()).default({}),
    timeoutSeconds: z
      .number()
      .int()
      .min(1)
      .max(scriptLimits.maxTimeoutSeconds)
      .optional()
      .meta({ description: "This run's timeout; default the script's" }),
  })
  .strict()
  .superRefine((body, ctx) => {
    if (body.groupId && body.deviceIds)
      ctx.addIssue({ code: 'custom', path: ['groupId'], message: 'Give deviceIds or groupId, not both' });
    else if (!body.groupId && !body.deviceIds)
      ctx.addIssue({ code: 'custom', path: ['deviceIds'], message: 'Give deviceIds or groupId' });
  });
export type StartRun = z.output<typeof startRun>;

const counts = z
  .object(Object.fromEntries(runItemStatuses.map((s) => [s, z.number().int()])) as Record<RunItemStatus, z.ZodNumber>)
  .strict();

export const scriptRun = z
  .object({
    id: z.uuid(),
    scriptId: z.uuid(),
    scriptName: z.string(),
    scriptVersion: z.number().int(),
    parameters: z.record(z.string(), z.unknown()).meta({ description: 'Values given, secret ones left out' }),
    secretParameters: z
      .array(z.string())
      .meta({ description: "Names of the script's secret parameters: their values are never stored" }),
    timeoutSeconds: z.number().int(),
    startedBy: actorReply,
    createdAt: timestampReply,
    deviceCount: z.number().int(),
    counts: counts.meta({ description: 'Items by status' }),
    done: z.boolean().meta({ description: 'Every item reached a final status' }),
  })
  .strict()
  .meta({ id: 'ScriptRun' });

export const runItem = z
  .object({
    id: z.uuid(),
    runId: z.uuid(),
    deviceId: z.uuid(),
    orgId: z.uuid(),
    hostname: z.string(),
    status: z.enum(runItemStatuses),
    expiresAt: timestampReply.meta({ description: 'A pending item expires then' }),
    sentAt: timestampReply.nullable(),
    startedAt: timestampReply.nullable(),
    finishedAt: timestampReply.nullable(),
    exitCode: z.number().int().nullable(),
    durationMs: z.number().int().nullable(),
    stdout: z.string().nullable(),
    stderr: z.string().nullable(),
    stdoutTruncated: z.boolean(),
    stderrTruncated: z.boolean(),
    error: z.object({ code: z.string(), message: z.string() }).strict().nullable(),
  })
  .strict()
  .meta({ id: 'ScriptRunItem' });
export const runItemPage = pageOf(runItem).meta({ id: 'ScriptRunItemPage' });
export const runParams = z.object({ runId: z.uuid() });
export const runItemsQuery = z.object({
  ...pageQuery({ defaultLimit: 50, maxLimit: 50 }),
  status: optionalParam(z.enum(runItemStatuses)),
});
export type RunItemsQuery = z.output<typeof runItemsQuery>;

/** Bundles: JSON, bundleVersion 1, up to 200 scripts and 20 MB. */
export const bundleLimits = { scripts: 200, bytes: 20 * 1024 * 1024 } as const;
export const importModes = ['skip', 'rename', 'new-version'] as const;
export const previewStatuses = ['new', 'name-conflict', 'invalid'] as const;
export type PreviewStatus = (typeof previewStatuses)[number];
export const importResults = [
  'created',
  'renamed',
  'new-version',
  'unchanged',
  'skipped',
  'invalid',
  'changed-since-preview',
] as const;
export type ImportResult = (typeof importResults)[number];

/** The envelope is checked strictly; each script is checked on its own, so one bad entry is reported, not fatal. */
export const bundle = z
  .object({
    bundleVersion: z.literal(1, { error: 'Unknown bundleVersion: this service reads bundleVersion 1' }),
    exportedAt: z.string().optional(),
    scripts: z.array(z.unknown()).max(bundleLimits.scripts),
  })
  .meta({ id: 'ScriptBundle' });
export type Bundle = z.output<typeof bundle>;

const importTarget = {
  availability: z.enum(['organization', 'partner']).optional(),
  orgId: z.uuid().optional(),
  partnerId: z.uuid().optional().meta({ description: 'Platform callers only, for availability partner' }),
};
const requireTarget = (body: { availability?: string; orgId?: string }, ctx: z.RefinementCtx) => {
  if (body.availability === 'partner' && body.orgId)
    ctx.addIssue({ code: 'custom', path: ['orgId'], message: 'A partner import names no organization' });
  if (body.availability !== 'partner' && !body.orgId)
    ctx.addIssue({ code: 'custom', path: ['orgId'], message: 'Give orgId, or availability "partner"' });
};

export const previewBundle = z
  .object({ bundle, ...importTarget })
  .strict()
  .superRefine(requireTarget);
export type PreviewBundle = z.output<typeof previewBundle>;
export const importBundle = z
  .object({
    bundle,
    mode: z.enum(importModes).default('skip').meta({ description: 'What a name conflict does, unless modes names it' }),
    modes: z.record(z.string(), z.enum(importModes)).optional().meta({ description: 'Per script name' }),
    ...importTarget,
    expected: z
      .record(z.string(), z.enum(['new', 'name-conflict']))
      .optional()
      .meta({
        description: "The preview's status per script name: a script whose status changed since is not applied",
      }),
  })
  .strict()
  .superRefine(requireTarget);
export type ImportBundle = z.output<typeof importBundle>;

const previewEntry = z
  .object({
    index: z.number().int(),
    name: z.string().nullable(),
    status: z.enum(previewStatuses),
    existingScriptId: z.uuid().nullable(),
    errors: z.array(z.object({ path: z.string(), message: z.string() }).strict()),
  })
  .strict();
export const bundlePreview = z
  .object({
    bundleVersion: z.literal(1),
    scripts: z.array(previewEntry),
    summary: z
      .object({
        total: z.number().int(),
        new: z.number().int(),
        conflicts: z.number().int(),
        invalid: z.number().int(),
      })
      .strict(),
  })
  .strict()
  .meta({ id: 'ScriptBundlePreview' });
export const bundleImportResult = z
  .object({
    scripts: z.array(
      z
        .object({
          index: z.number().int(),
          name: z.string().nullable(),
          result: z.enum(importResults),
          scriptId: z.uuid().nullable(),
          version: z.number().int().nullable(),
          errors: z.array(z.object({ path: z.string(), message: z.string() }).strict()),
        })
        .strict(),
    ),
    summary: z
      .partialRecord(z.enum(importResults), z.number().int())
      .meta({ description: 'Scripts by result; a result no script had is left out' }),
  })
  .strict()
  .meta({ id: 'ScriptBundleImport' });
export const exportQuery = z.object({
  ids: z
    .string()
    .transform((text) => [...new Set(text.split(',').map((id) => id.trim().toLowerCase()))])
    .pipe(z.array(z.uuid()).min(1).max(bundleLimits.scripts))
    .meta({ description: 'Comma-separated script ids' }),
});
/** A script as bundles carry it: no identifier of a script, an organization or a partner. */
const exportedScript = script.omit({
  id: true,
  partnerId: true,
  orgId: true,
  availability: true,
  version: true,
  createdAt: true,
  updatedAt: true,
});
export const exportedBundle = z
  .object({ bundleVersion: z.literal(1), exportedAt: timestamp, scripts: z.array(exportedScript) })
  .strict()
  .meta({ id: 'ScriptBundleExport' });
