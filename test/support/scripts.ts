import type { Db } from '#shared/db/db.ts';

/** A valid script definition with a unique name, overridden as a test needs. */
export const scriptBody = (overrides: Record<string, unknown> = {}) => ({
  name: `Clean temp ${Math.random().toString(36).slice(2, 8)}`,
  language: 'powershell',
  osTypes: ['windows'],
  content: 'Remove-Item $env:TEMP\\* -Recurse',
  parameters: [{ name: 'days', type: 'number', required: true }],
  ...overrides,
});

/** The audit rows of one action on one resource, by organization. */
export const auditRowsOf = (db: Db, action: string, resourceId: string) =>
  db
    .query<{ orgId: string; actorId: string; actorType: string; result: string; details: Record<string, any> }>(
      `SELECT org_id AS "orgId", actor_id AS "actorId", actor_type AS "actorType", result, details FROM audit_logs
        WHERE action = :action::text AND resource_id = :resourceId::uuid ORDER BY org_id, seq`,
      { action, resourceId },
    )
    .then((r) => r.rows);
