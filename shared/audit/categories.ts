/**
 * The category of an audit row, the security events and the compliance-tracked actions.
 * The lists are the specification's constants; the SQL built from them holds literals, never input.
 */
export const auditCategories = [
  'authentication',
  'device',
  'automation',
  'policy',
  'alert',
  'compliance',
  'organization',
  'system',
] as const;
export type AuditCategory = (typeof auditCategories)[number];

/** Action prefixes per category; an action matching none is `system`. */
const categoryPrefixes: readonly (readonly [prefix: string, category: AuditCategory])[] = [
  ['user.login', 'authentication'],
  ['user.logout', 'authentication'],
  ['user.permission', 'authentication'],
  ['device.', 'device'],
  ['script.', 'automation'],
  ['policy.', 'policy'],
  ['automation.policy.', 'policy'],
  ['alert.', 'alert'],
  ['data.', 'compliance'],
  ['organization.', 'organization'],
  // How long an organization's logs are kept is one of its settings; the daily run's deletions are the system's own.
  ['log_retention.', 'organization'],
  ['agent_logs.', 'system'],
  ['device_event_logs.', 'system'],
];

/** The category of an action, as categorySql works it out in SQL. */
export function auditCategoryOf(action: string): AuditCategory {
  return categoryPrefixes.find(([prefix]) => action.startsWith(prefix))?.[1] ?? 'system';
}

/** The actions the security events report shows. */
export const securityEventActions = [
  'user.login',
  'user.login.failed',
  'user.permission.change',
  'policy.update',
  'policy.create',
  'policy.evaluate',
  'automation.policy.evaluate',
  'agent.source.ip.changed',
] as const;

/** The compliance-tracked actions. */
export const complianceActions = [
  'data.access',
  'data.export',
  'device.create',
  'device.delete',
  'policy.update',
  'policy.evaluate',
  'automation.policy.evaluate',
  'script.execute',
  'organization.update',
] as const;

const literal = (text: string) => `'${text.replaceAll("'", "''")}'`;

/** The category of the action in `column`, as SQL: the one definition lists and reports share. */
export function categorySql(column: string): string {
  return `CASE ${categoryPrefixes.map(([prefix, category]) => `WHEN starts_with(${column}, ${literal(prefix)}) THEN ${literal(category)}`).join(' ')} ELSE 'system' END`;
}

/** `column IN (...)` over a constant list of actions. */
export function actionInSql(column: string, actions: readonly string[]): string {
  return `${column} IN (${actions.map(literal).join(', ')})`;
}
