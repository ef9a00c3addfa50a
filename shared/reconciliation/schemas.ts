import { z } from 'zod';
import { storableText } from '../agents/schemas.ts';

export const reconciliationStates = ['enrolled', 'missing', 'extra', 'ambiguous'] as const;
export type ReconciliationState = (typeof reconciliationStates)[number];

/** A wave of 10,000 devices in one upload. */
export const maxReconciliationRows = 10_000;

const listedDevice = z
  .object({
    hostname: storableText({ min: 1, max: 255 }),
    serial: storableText({ min: 1, max: 255 }).optional(),
    externalId: storableText({ min: 1, max: 255 }).optional().meta({ description: "The other RMM's device id" }),
    organization: storableText({ min: 1, max: 255 }).optional().meta({ description: "The other RMM's customer name" }),
  })
  .strict();

export const reconciliationUpload = z
  .object({ devices: z.array(listedDevice).min(1).max(maxReconciliationRows) })
  .strict()
  .meta({ id: 'ReconciliationUpload' });

const counts = z
  .object({
    enrolled: z.number().int(),
    missing: z.number().int(),
    extra: z.number().int(),
    ambiguous: z.number().int(),
  })
  .strict();

export const reconciledDevice = z
  .object({
    state: z.enum(reconciliationStates),
    hostname: z.string(),
    serial: z.string().nullable(),
    externalId: z.string().nullable(),
    organization: z.string().nullable(),
    deviceId: z.uuid().nullable().meta({ description: 'The enrolled device (enrolled, extra)' }),
    candidates: z.array(z.uuid()).meta({ description: 'The enrolled devices an ambiguous row could be' }),
  })
  .strict();

export const reconciliation = z
  .object({
    id: z.uuid(),
    orgId: z.uuid(),
    createdAt: z.iso.datetime({ offset: true }),
    rows: z.number().int(),
    counts,
    devices: z.array(reconciledDevice),
  })
  .strict()
  .meta({ id: 'Reconciliation' });

export const reconciliationProgress = z
  .object({
    latest: reconciliation.nullable(),
    history: z
      .array(
        z
          .object({ id: z.uuid(), createdAt: z.iso.datetime({ offset: true }), rows: z.number().int(), counts })
          .strict(),
      )
      .meta({ description: 'Every upload, oldest first (at most the last 100): counts per state over time' }),
  })
  .strict()
  .meta({ id: 'ReconciliationProgress' });
