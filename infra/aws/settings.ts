import type { Node } from 'constructs';

/**
 * Everything an MSP sets for its deployment, from CDK context (`cdk deploy -c jwtJwksUrl=https://…`, or
 * `context` in cdk.json) or as stack props. README "Deploy" lists them.
 */
export interface LogbookSettings {
  /** Identity provider: the JWKS that signs user tokens, their issuer and audience. */
  jwtJwksUrl?: string;
  jwtIssuer: string;
  jwtAudience: string;
  /** Take the client IP from X-Forwarded-For (seed 5 rule 5): only behind a proxy that sets it. */
  trustProxyHeaders: boolean;
  /** ARN of a Secrets Manager secret holding the agents' enrollment secret; enrollment needs none without it. */
  agentEnrollmentSecretArn?: string;
  /** Origin of the audit viewer, allowed by CORS (none: no browser origin is allowed). */
  viewerOrigin?: string;
  /** Aurora Serverless v2 capacity: the cluster pauses at 0 ACU after `autoPauseMinutes` idle. */
  maxCapacityAcu: number;
  autoPauseMinutes: number;
  /** Deleting the stack: refused while deletion protection is on; snapshot first, or not (test stages). */
  deletionProtection: boolean;
  snapshotOnDelete: boolean;
  /** EventBridge schedule expression of the retention worker (daily by default). */
  retentionSchedule: string;
  logRetentionDays: number;
  /** API Gateway stage throttling: a ceiling on what a flood of requests can cost. */
  throttleRateLimit: number;
  throttleBurstLimit: number;
}

export const defaultSettings: LogbookSettings = {
  jwtIssuer: 'logbook',
  jwtAudience: 'logbook',
  trustProxyHeaders: false,
  maxCapacityAcu: 4,
  autoPauseMinutes: 5,
  deletionProtection: true,
  snapshotOnDelete: true,
  retentionSchedule: 'cron(15 3 * * ? *)',
  logRetentionDays: 30,
  throttleRateLimit: 100,
  throttleBurstLimit: 200,
};

/** A context value as given on the command line (always text) or in cdk.json (typed). */
function read(node: Node, key: keyof LogbookSettings): unknown {
  const value: unknown = node.tryGetContext(key);
  const fallback = defaultSettings[key];
  if (value === undefined || value === '') return fallback;
  if (typeof fallback === 'boolean' && typeof value === 'string') {
    if (value !== 'true' && value !== 'false') throw new Error(`context ${key} must be true or false, not ${value}`);
    return value === 'true';
  }
  if (typeof fallback === 'number') {
    const number = Number(value);
    if (!Number.isFinite(number)) throw new Error(`context ${key} must be a number, not ${String(value)}`);
    return number;
  }
  return value;
}

export function settingsFromContext(node: Node): LogbookSettings {
  const keys: (keyof LogbookSettings)[] = [
    'jwtJwksUrl', 'jwtIssuer', 'jwtAudience', 'trustProxyHeaders', 'agentEnrollmentSecretArn', 'viewerOrigin', 'maxCapacityAcu',
    'autoPauseMinutes', 'deletionProtection', 'snapshotOnDelete', 'retentionSchedule', 'logRetentionDays', 'throttleRateLimit', 'throttleBurstLimit',
  ];
  const settings = Object.fromEntries(keys.map((key) => [key, read(node, key)]).filter(([, value]) => value !== undefined)) as unknown as LogbookSettings;
  // Aurora Serverless v2 with auto-pause: 0 to 256 ACU in steps of 0.5; a pause after 5 minutes to 24 hours.
  if (settings.maxCapacityAcu < 1 || settings.maxCapacityAcu > 256 || settings.maxCapacityAcu % 0.5 !== 0) throw new Error('context maxCapacityAcu must be 1 to 256 in steps of 0.5');
  if (settings.autoPauseMinutes < 5 || settings.autoPauseMinutes > 1440) throw new Error('context autoPauseMinutes must be 5 to 1440');
  return settings;
}
