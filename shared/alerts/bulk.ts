import type { AuditContext } from '../audit/writer.ts';
import type { Principal } from '../auth/principal.ts';
import { requirePermission } from '../auth/tenancy.ts';
import type { Db } from '../db/db.ts';
import { DomainError } from '../errors.ts';
import { acknowledgeAlert, resolveAlert } from './alerts.ts';
import * as store from './store.ts';

type Outcome = 'acknowledged' | 'resolved' | 'not_found' | 'invalid_state';

/**
 * Acknowledges or resolves many alerts, each as the single route does it (its own transaction and audit row): an
 * outcome per id. An alert of another tenant reads like an unknown one (`not_found`); one whose status does not allow
 * the change is `invalid_state`, with its status.
 */
export async function changeAlerts(
  db: Db,
  principal: Principal,
  alertIds: string[],
  to: 'acknowledged' | 'resolved',
  audit: AuditContext,
) {
  requirePermission(principal, 'alerts:manage');
  const change = to === 'acknowledged' ? acknowledgeAlert : resolveAlert;
  const results: { alertId: string; outcome: Outcome; status: 'open' | 'acknowledged' | 'resolved' | null }[] = [];
  for (const alertId of alertIds) {
    try {
      const alert = await change(db, principal, alertId, audit);
      results.push({ alertId, outcome: to, status: alert.status });
    } catch (error) {
      if (!(error instanceof DomainError) || !['NOT_FOUND', 'INVALID_STATE'].includes(error.code)) throw error;
      const current = error.code === 'INVALID_STATE' ? await store.selectAlert(db, principal, alertId) : undefined;
      results.push({
        alertId,
        outcome: error.code === 'NOT_FOUND' ? 'not_found' : 'invalid_state',
        status: current?.status ?? null,
      });
    }
  }
  return { results, changed: results.filter((result) => result.outcome === to).length };
}
