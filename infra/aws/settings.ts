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
  /** Deploy the audit viewer (web/): a private S3 bucket behind CloudFront, whose origin CORS allows. */
  viewer: boolean;
  /**
   * More browser origins CORS allows, comma-separated, beside the deployed viewer's: a viewer served elsewhere (a
   * custom domain, `http://localhost:5173` while developing it). None: only the deployed viewer's.
   */
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
  /** Powertools: the `service` of logs, metrics and traces, and the CloudWatch namespace of the metrics. */
  serviceName: string;
  metricsNamespace: string;
  /** The Powertools layer's ARN where its public SSM parameter is not published (infra/aws/powertools.ts). */
  powertoolsLayerArn?: string;
  /** Bump to rotate the audit anchors' signing key on the next deploy (infra/aws/anchor-key.ts). */
  anchorKeyGeneration: number;
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
  viewer: true,
  serviceName: 'logbook',
  metricsNamespace: 'Logbook',
  anchorKeyGeneration: 1,
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
    'jwtJwksUrl',
    'jwtIssuer',
    'jwtAudience',
    'trustProxyHeaders',
    'agentEnrollmentSecretArn',
    'viewer',
    'viewerOrigin',
    'maxCapacityAcu',
    'autoPauseMinutes',
    'deletionProtection',
    'snapshotOnDelete',
    'retentionSchedule',
    'logRetentionDays',
    'throttleRateLimit',
    'throttleBurstLimit',
    'serviceName',
    'metricsNamespace',
    'powertoolsLayerArn',
    'anchorKeyGeneration',
  ];
  const settings = Object.fromEntries(
    keys.map((key) => [key, read(node, key)]).filter(([, value]) => value !== undefined),
  ) as unknown as LogbookSettings;
  // Aurora Serverless v2 with auto-pause: 0 to 256 ACU in steps of 0.5; a pause after 5 minutes to 24 hours.
  if (settings.maxCapacityAcu < 1 || settings.maxCapacityAcu > 256 || settings.maxCapacityAcu % 0.5 !== 0)
    throw new Error('context maxCapacityAcu must be 1 to 256 in steps of 0.5');
  if (settings.autoPauseMinutes < 5 || settings.autoPauseMinutes > 1440)
    throw new Error('context autoPauseMinutes must be 5 to 1440');
  if (!Number.isInteger(settings.anchorKeyGeneration) || settings.anchorKeyGeneration < 1)
    throw new Error('context anchorKeyGeneration must be a whole number from 1');
  return settings;
}
