import type { Node } from 'constructs';

/**
 * Everything an MSP sets for its deployment, from CDK context (`cdk deploy -c jwtJwksUrl=https://…`, or
 * `context` in cdk.json) or as stack props. docs/operations.md lists them.
 */
export interface LogbookSettings {
  /**
   * `cognito`: the stack's own Cognito user pool signs the users in (infra/aws/identity.ts) and the jwt* settings
   * follow from it; unset: your own OpenID Connect provider, named by the jwt* settings.
   */
  identity?: 'cognito';
  /** The prefix of the hosted sign-in page's domain (`<prefix>.auth.<region>.amazoncognito.com`); default logbook-<account>. */
  cognitoDomainPrefix?: string;
  /** Identity provider: the JWKS that signs user tokens, their issuer and audience. */
  jwtJwksUrl?: string;
  /** Synthesize without `jwtJwksUrl` (no user token is then accepted): only for agent-only test stages. */
  allowNoUserAuth: boolean;
  jwtIssuer: string;
  jwtAudience: string;
  /**
   * The claims of the identity provider's tokens that carry Logbook's role, partner id, organization id(s), scope
   * and user id (docs/operations.md "Identity"); unset: `role`, `partnerId`, `orgId`, `scope`, `sub`.
   */
  jwtClaimRole?: string;
  jwtClaimPartnerId?: string;
  jwtClaimOrgIds?: string;
  jwtClaimScope?: string;
  jwtClaimUserId?: string;
  /** Take the client IP from X-Forwarded-For: only behind a proxy that sets it. */
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
  /** EventBridge schedule expression of the billing due run (daily by default). */
  billingSchedule: string;
  logRetentionDays: number;
  /**
   * The devices the deployment is sized for: the API stages' throttles follow from it (apiThrottles,
   * docs/operations.md "Scale settings"), and the alarms that warn when a fleet nears them.
   */
  expectedDevices: number;
  /**
   * API Gateway stage throttling of both APIs, requests a second and burst: a ceiling on what a flood of requests can
   * cost. Unset: sized from expectedDevices.
   */
  throttleRateLimit?: number;
  throttleBurstLimit?: number;
  /**
   * X-Ray tracing of the functions that serve agent routes (and the WebSocket's): off by default, for cost
   * (docs/operations.md "Tracing and log levels"); the other functions are always traced.
   */
  agentTracing: boolean;
  /** Powertools: the `service` of logs, metrics and traces, and the CloudWatch namespace of the metrics. */
  serviceName: string;
  metricsNamespace: string;
  /** The Powertools layer's ARN where its public SSM parameter is not published (infra/aws/powertools.ts). */
  powertoolsLayerArn?: string;
  /** Bump to rotate the audit anchors' signing key on the next deploy (infra/aws/anchor-key.ts). */
  anchorKeyGeneration: number;
  /**
   * The S3 buckets of this account that audit streams of type `s3` may write to, comma-separated: the queue worker
   * may put objects into these and no other, and a destination naming another bucket is refused. None: no S3 stream.
   */
  auditStreamBuckets?: string;
  /** Days each witnessed anchor stays locked (S3 Object Lock, compliance mode) in the witness bucket. */
  witnessRetentionDays: number;
  /** Anchors taken (and witnessed) this often besides the daily run, in minutes; 0: daily only. */
  anchorIntervalMinutes: number;
  /** The oldest row an audit stream has not delivered may wait this long before the lag alarm. */
  auditStreamLagAlarmSeconds: number;
  /** An e-mail address the alarm topic notifies (it must confirm the subscription); none: subscribe yourself. */
  alarmEmail?: string;
  /** The SES-verified sender (address, or an address of a verified domain) of notification e-mails; none: e-mail channels fail "not set". */
  notificationEmailFrom?: string;
  /**
   * Concurrency reserved for (and capping) the live-query and WebSocket functions, so that a flood of live queries
   * cannot take the executions the retention and migration functions need; 0: none reserved.
   */
  liveQueryConcurrency: number;
  agentChannelConcurrency: number;
  /** A custom domain for the HTTP API: its name and an ACM certificate of this region for it. */
  apiDomainName?: string;
  apiCertificateArn?: string;
  /** A custom domain for the viewer: its name and an ACM certificate in us-east-1 (CloudFront's) for it. */
  viewerDomainName?: string;
  viewerCertificateArn?: string;
  /** A daily AWS Backup plan of the cluster, kept 35 days (docs/operations.md "Backups"). */
  backupPlan: boolean;
  /** The Lambda runtime of every function (docs/operations.md "Node.js runtime"). */
  lambdaRuntime: string;
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
  billingSchedule: 'cron(5 0 * * ? *)',
  logRetentionDays: 30,
  expectedDevices: 1_000,
  agentTracing: false,
  viewer: true,
  serviceName: 'logbook',
  metricsNamespace: 'Logbook',
  anchorKeyGeneration: 1,
  witnessRetentionDays: 400,
  anchorIntervalMinutes: 0,
  auditStreamLagAlarmSeconds: 900,
  allowNoUserAuth: false,
  liveQueryConcurrency: 100,
  agentChannelConcurrency: 50,
  backupPlan: false,
  lambdaRuntime: 'nodejs22.x',
};

/** Numeric settings without a default: read as numbers all the same. */
const numericWithoutDefault = new Set<keyof LogbookSettings>(['throttleRateLimit', 'throttleBurstLimit']);

/** A context value as given on the command line (always text) or in cdk.json (typed). */
function read(node: Node, key: keyof LogbookSettings): unknown {
  const value: unknown = node.tryGetContext(key);
  const fallback = defaultSettings[key];
  if (value === undefined || value === '') return fallback;
  if (typeof fallback === 'boolean' && typeof value === 'string') {
    if (value !== 'true' && value !== 'false') throw new Error(`context ${key} must be true or false, not ${value}`);
    return value === 'true';
  }
  if (typeof fallback === 'number' || numericWithoutDefault.has(key)) {
    const number = Number(value);
    if (!Number.isFinite(number)) throw new Error(`context ${key} must be a number, not ${String(value)}`);
    return number;
  }
  return value;
}

export function settingsFromContext(node: Node): LogbookSettings {
  const keys: (keyof LogbookSettings)[] = [
    'identity',
    'cognitoDomainPrefix',
    'jwtJwksUrl',
    'jwtIssuer',
    'jwtAudience',
    'jwtClaimRole',
    'jwtClaimPartnerId',
    'jwtClaimOrgIds',
    'jwtClaimScope',
    'jwtClaimUserId',
    'trustProxyHeaders',
    'agentEnrollmentSecretArn',
    'viewer',
    'viewerOrigin',
    'maxCapacityAcu',
    'autoPauseMinutes',
    'deletionProtection',
    'snapshotOnDelete',
    'retentionSchedule',
    'billingSchedule',
    'logRetentionDays',
    'expectedDevices',
    'throttleRateLimit',
    'throttleBurstLimit',
    'agentTracing',
    'serviceName',
    'metricsNamespace',
    'powertoolsLayerArn',
    'anchorKeyGeneration',
    'auditStreamBuckets',
    'witnessRetentionDays',
    'anchorIntervalMinutes',
    'auditStreamLagAlarmSeconds',
    'allowNoUserAuth',
    'alarmEmail',
    'notificationEmailFrom',
    'liveQueryConcurrency',
    'agentChannelConcurrency',
    'apiDomainName',
    'apiCertificateArn',
    'viewerDomainName',
    'viewerCertificateArn',
    'backupPlan',
    'lambdaRuntime',
  ];
  const settings = Object.fromEntries(
    keys.map((key) => [key, read(node, key)]).filter(([, value]) => value !== undefined),
  ) as unknown as LogbookSettings;
  // Aurora Serverless v2 with auto-pause: 0 to 256 ACU in steps of 0.5; a pause after 5 minutes to 24 hours.
  if (settings.maxCapacityAcu < 1 || settings.maxCapacityAcu > 256 || settings.maxCapacityAcu % 0.5 !== 0)
    throw new Error('context maxCapacityAcu must be 1 to 256 in steps of 0.5');
  if (settings.autoPauseMinutes < 5 || settings.autoPauseMinutes > 1440)
    throw new Error('context autoPauseMinutes must be 5 to 1440');
  if (settings.identity !== undefined && settings.identity !== 'cognito')
    throw new Error(
      `context identity must be cognito (or unset, for your own identity provider), not ${settings.identity}`,
    );
  if (!Number.isInteger(settings.anchorKeyGeneration) || settings.anchorKeyGeneration < 1)
    throw new Error('context anchorKeyGeneration must be a whole number from 1');
  if (!Number.isInteger(settings.witnessRetentionDays) || settings.witnessRetentionDays < 1)
    throw new Error('context witnessRetentionDays must be a whole number of days from 1');
  if (!Number.isInteger(settings.anchorIntervalMinutes) || settings.anchorIntervalMinutes < 0)
    throw new Error('context anchorIntervalMinutes must be a whole number of minutes (0: daily anchors only)');
  return settings;
}

/**
 * Refuses settings with which the stack would deploy and then fail at run time, with the message an operator needs.
 * Checked on the merged settings (context and props alike).
 */
export function checkSettings(settings: LogbookSettings): void {
  if (settings.identity !== undefined && settings.identity !== 'cognito')
    throw new Error(
      `identity must be cognito (or unset, for your own identity provider), not ${String(settings.identity)}`,
    );
  if (!settings.jwtJwksUrl && settings.identity !== 'cognito' && !settings.allowNoUserAuth)
    throw new Error(
      "Set jwtJwksUrl (cdk deploy -c jwtJwksUrl=https://<your identity provider>/.well-known/jwks.json), or -c identity=cognito for a user pool of the stack's own: without it no user token is accepted and every user route fails. For an agent-only test stage, deploy with -c allowNoUserAuth=true.",
    );
  for (const [name, value] of [
    ['liveQueryConcurrency', settings.liveQueryConcurrency],
    ['agentChannelConcurrency', settings.agentChannelConcurrency],
  ] as const)
    if (!Number.isInteger(value) || value < 0) throw new Error(`context ${name} must be a whole number from 0`);
  for (const [domain, certificate] of [
    ['apiDomainName', 'apiCertificateArn'],
    ['viewerDomainName', 'viewerCertificateArn'],
  ] as const)
    if (Boolean(settings[domain]) !== Boolean(settings[certificate]))
      throw new Error(`context ${domain} and ${certificate} go together: set both or neither`);
  if (settings.viewerCertificateArn && !/^arn:[\w-]+:acm:us-east-1:/.test(settings.viewerCertificateArn))
    throw new Error(
      'context viewerCertificateArn must be an ACM certificate in us-east-1 (CloudFront uses only those)',
    );
  if (!Number.isInteger(settings.expectedDevices) || settings.expectedDevices < 1)
    throw new Error('context expectedDevices must be a whole number of devices from 1');
  for (const name of ['throttleRateLimit', 'throttleBurstLimit'] as const) {
    const value = settings[name];
    if (value !== undefined && (!Number.isInteger(value) || value < 1))
      throw new Error(`context ${name} must be a whole number from 1 (or unset: sized from expectedDevices)`);
  }
  if (!/^nodejs\d+\.x$/.test(settings.lambdaRuntime))
    throw new Error(
      `context lambdaRuntime must name a Node.js runtime (nodejs22.x, nodejs24.x), not ${settings.lambdaRuntime}`,
    );
}

/**
 * What one device sends, requests a minute, averaged (docs/operations.md "Scale settings"): its heartbeat, on either
 * API (an agent without a WebSocket heartbeats over HTTP, so each stage alone must carry every heartbeat), and its
 * other traffic (log and event-log uploads, posture, monitoring results, script results, keep-alives), at most one
 * more a minute on average.
 */
const heartbeatsPerDeviceMinute = 1;
const otherPerDeviceMinute = 1;
/** Agents coming back in step (after an outage or a deploy), and clock-aligned schedules. */
const headroom = 3;
/** Users, API keys and integrations, beside the agents. */
const userRequestsPerSecond = 50;

type Throttle = { rateLimit: number; burstLimit: number };

/**
 * The throttles of the HTTP API's stage and the agents' WebSocket stage: explicit settings, or sized from
 * expectedDevices: rate = 50 + 3 × (1 + 1) × devices / 60 requests a second (50 + devices / 10), burst twice the rate.
 */
export function apiThrottles(settings: LogbookSettings): { http: Throttle; webSocket: Throttle } {
  const rateLimit =
    settings.throttleRateLimit ??
    Math.ceil(
      userRequestsPerSecond +
        (headroom * (heartbeatsPerDeviceMinute + otherPerDeviceMinute) * settings.expectedDevices) / 60,
    );
  const throttle = { rateLimit, burstLimit: settings.throttleBurstLimit ?? 2 * rateLimit };
  return { http: throttle, webSocket: throttle };
}
