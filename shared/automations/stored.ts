/** What the domain's modules share about a stored automation: its actor, its actions as answered and run, its audit. */

import { auditOwnedChange } from '../audit/partner-audit.ts';
import { type AuditContext, auditChange } from '../audit/writer.ts';
import { openSecret } from '../auth/key-seal.ts';
import type { Principal } from '../auth/principal.ts';
import type { Tx } from '../db/db.ts';
import type * as store from './store.ts';

export const actorOf = (principal: Principal): store.Actor => ({
  actorType: principal.actorType,
  id: principal.id,
  email: principal.email,
  name: principal.name,
  role: principal.role,
});

/** The path of the inbound webhook of an automation. */
export const webhookPath = (id: string) => `/api/v1/hooks/automations/${id}`;

/** An action as answered: a run-script action names its secret parameters, never their values. */
export function publicAction(action: store.StoredAction) {
  if (action.type !== 'run-script') return action;
  const { sealedParameters, ...rest } = action as store.StoredAction & { sealedParameters?: Record<string, string> };
  return { ...rest, secretParameters: Object.keys(sealedParameters ?? {}) };
}

/** A run-script action's parameters for a run: the clear ones and the secret ones opened. */
export function actionParameters(action: store.StoredAction): Record<string, unknown> {
  const sealed = (action.sealedParameters ?? {}) as Record<string, string>;
  const opened = Object.fromEntries(
    Object.entries(sealed).flatMap(([name, text]) => {
      const value = openSecret(text);
      return value === undefined ? [] : [[name, JSON.parse(value) as unknown]];
    }),
  );
  return { ...((action.parameters ?? {}) as Record<string, unknown>), ...opened };
}

const resource = (row: { id: string; name: string }) => ({
  resourceType: 'automation',
  resourceId: row.id,
  resourceName: row.name,
});

/** A change of an automation goes into its organization's trail, or, for a partner automation, every organization's. */
export function auditAutomation(
  tx: Tx,
  audit: AuditContext,
  row: { id: string; name: string; partnerId: string; orgId: string | null },
  action: string,
  details: Record<string, unknown>,
) {
  const event = { action, ...resource(row), details };
  return auditOwnedChange(tx, audit, row, event);
}

/** The `automation.run` rows of runs fired together, each in its run's organization: one statement for all of them. */
export function auditRuns(
  tx: Tx,
  audit: AuditContext,
  row: { id: string; name: string },
  runs: { orgId: string; details: Record<string, unknown> }[],
) {
  if (runs.length === 0) return Promise.resolve();
  return auditChange(
    tx,
    audit,
    runs.map((run) => ({ action: 'automation.run', ...resource(row), details: run.details, orgId: run.orgId })),
  );
}
