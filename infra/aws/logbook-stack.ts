import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { CfnOutput, Duration, Stack, type StackProps } from 'aws-cdk-lib';
import { MathExpression, Metric, TreatMissingData } from 'aws-cdk-lib/aws-cloudwatch';
import { Rule, RuleTargetInput, Schedule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { SqsDestination } from 'aws-cdk-lib/aws-lambda-destinations';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { apiInfo, defaultRoute, domainRoutes, routes, wsRoutes } from '#functions/routes.ts';
import { buildOpenApi } from '#shared/http/openapi.ts';
import type { Grant, RouteDef } from '#shared/http/route.ts';
import { AgentChannel } from './agent-channel.ts';
import { Alarms } from './alarms.ts';
import { AnchorKey } from './anchor-key.ts';
import { Database } from './database.ts';
import {
  type DispatchTarget,
  LogbookFunction,
  projectRoot,
  useLambdaRuntime,
  writeDispatchEntry,
} from './functions.ts';
import { RestApi } from './http-api.ts';
import { CognitoIdentity } from './identity.ts';
import { acknowledge } from './nag.ts';
import { powertoolsLayer } from './powertools.ts';
import { apiThrottles, checkSettings, type LogbookSettings, settingsFromContext } from './settings.ts';
import { Viewer } from './viewer.ts';
import { AnchorWitness } from './witness.ts';
import { WorkQueue } from './work-queue.ts';

export interface LogbookStackProps extends StackProps {
  /** Overrides of the settings otherwise read from CDK context. */
  settings?: Partial<LogbookSettings>;
  /** Routes served beside the table's, route key → the Lambda group that serves it (the stack test's thousand routes). */
  extraRoutes?: Record<string, string>;
}

/** A Lambda of the HTTP API: what answers each of its route keys, and the union of its routes' grants. */
export interface RouteGroup {
  targets: Record<string, DispatchTarget>;
  grants: Set<Grant>;
}

/**
 * The Lambdas of the HTTP API as the domains declare them: a route goes to its `group`, by default the folder
 * declaring it (`hierarchy`, `audit`, …); $default (the 404/405 answer) to the group it names.
 */
export function routeGroups(
  domains: Record<string, Record<string, RouteDef>> = domainRoutes,
  fallback: { handler: string; group: string; grants?: readonly Grant[] } = defaultRoute,
): Map<string, RouteGroup> {
  const groups = new Map<string, RouteGroup>();
  const add = (group: string, key: string, target: DispatchTarget, grants: readonly Grant[] = []) => {
    const known = groups.get(group) ?? { targets: {}, grants: new Set<Grant>() };
    known.targets[key] = target;
    for (const grant of grants) known.grants.add(grant);
    groups.set(group, known);
  };
  for (const [folder, table] of Object.entries(domains))
    for (const [key, route] of Object.entries(table))
      add(route.group ?? folder, key, { declaredIn: folder }, route.grants);
  add(fallback.group, '$default', { handler: fallback.handler }, fallback.grants);
  return groups;
}

/**
 * The Lambdas that serve agents: every group with an agent-authenticated route, and the WebSocket's (ws). Lambda
 * traces and filters logs per function, not per route, so a group serving agents is sized for the agents' traffic.
 */
export function agentRouteGroups(domains: Record<string, Record<string, RouteDef>> = domainRoutes): Set<string> {
  const groups = new Set<string>(['ws']);
  for (const [folder, table] of Object.entries(domains))
    for (const route of Object.values(table)) if (route.auth === 'agent') groups.add(route.group ?? folder);
  return groups;
}

/**
 * The prelude giving a Lambda the route table as data (functions/system/route-table.ts), computed here once and
 * carried gzipped (the OpenAPI document is about 400 KB of JSON, 40 KB so).
 */
export function routeTablePrelude(): string {
  const table = { keys: Object.keys(routes), document: buildOpenApi(routes, apiInfo, []) };
  const packed = gzipSync(JSON.stringify(table)).toString('base64');
  return [
    "import { gunzipSync } from 'node:zlib';",
    `import { provideRouteTable } from ${JSON.stringify(join(projectRoot, 'functions/system/route-table.ts'))};`,
    `const routeTable = JSON.parse(gunzipSync(Buffer.from(${JSON.stringify(packed)}, 'base64')).toString());`,
    'provideRouteTable({ keys: routeTable.keys, document: () => routeTable.document });',
  ].join('\n');
}

const pascal = (name: string) => name.replace(/(^|-)([a-z])/g, (_, __, c: string) => c.toUpperCase());

/** The extra browser origins of context viewerOrigin (comma-separated), each a bare origin such as https://viewer.example.com. */
export function extraOrigins(setting: string | undefined): string[] {
  const origins = (setting ?? '')
    .split(',')
    .map((origin) => origin.trim())
    .filter(Boolean);
  for (const origin of origins) {
    if (!URL.canParse(origin) || new URL(origin).origin !== origin)
      throw new Error(`context viewerOrigin must list origins (scheme://host[:port], no path), not ${origin}`);
  }
  return origins;
}

/** The buckets of context auditStreamBuckets (comma-separated), each a bucket name as S3 allows it. */
export function streamBuckets(setting: string | undefined): string[] {
  const buckets = (setting ?? '')
    .split(',')
    .map((bucket) => bucket.trim())
    .filter(Boolean);
  for (const bucket of buckets)
    if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket))
      throw new Error(`context auditStreamBuckets must list S3 bucket names, not ${bucket}`);
  return buckets;
}

/** Log retention in days as CloudWatch accepts it. */
function retentionDays(days: number): RetentionDays {
  if (!Object.values(RetentionDays).includes(days))
    throw new Error(
      `context logRetentionDays must be one of CloudWatch's retention periods (1, 3, 5, 7, 14, 30, 60, 90, …), not ${days}`,
    );
  return days as RetentionDays;
}

/**
 * Everything Logbook runs in AWS (docs/ARCHITECTURE.md), environment-agnostic: the HTTP API with one Lambda per route
 * group, the agents' WebSocket API, Aurora PostgreSQL Serverless v2 reached through the Data API, the migration
 * custom resource, the daily retention worker with its anchor signing key, and the audit viewer on S3 and
 * CloudFront. Nothing costs money while idle but the secrets, the stored data and logs (docs/operations.md).
 */
export class LogbookStack extends Stack {
  readonly database: Database;
  readonly restApi: RestApi;
  readonly agentChannel: AgentChannel;
  readonly retention: LogbookFunction;
  readonly billingRun: LogbookFunction;
  readonly anchorKey: AnchorKey;
  readonly viewer?: Viewer;
  /** The stack's own user pool (`identity: "cognito"`). */
  readonly identity?: CognitoIdentity;
  readonly alarms: Alarms;
  /** Where the daily run's event goes when all its attempts failed (docs/operations.md "Re-running a failed day"). */
  readonly retentionFailures: Queue;

  constructor(scope: Construct, id: string, props: LogbookStackProps = {}) {
    super(scope, id, props);
    const settings: LogbookSettings = { ...settingsFromContext(this.node), ...props.settings };
    checkSettings(settings);
    const logRetention = retentionDays(settings.logRetentionDays);
    const throttles = apiThrottles(settings);
    // Before any function: each of them runs with this one layer and this runtime.
    powertoolsLayer(this, settings.powertoolsLayerArn);
    useLambdaRuntime(this, settings.lambdaRuntime);

    this.database = new Database(this, 'Database', { ...settings, logRetention });
    const database = this.database;
    this.anchorKey = new AnchorKey(this, 'AnchorKey', { generation: settings.anchorKeyGeneration, logRetention });

    if (settings.identity === 'cognito')
      this.identity = new CognitoIdentity(this, 'Identity', {
        database,
        logRetention,
        domainPrefix: settings.cognitoDomainPrefix,
      });
    const apiEnvironment: Record<string, string> = {
      ...database.connection(database.appSecret, 'APP_DB_SECRET_ARN'),
      JWT_ISSUER: settings.jwtIssuer,
      JWT_AUDIENCE: settings.jwtAudience,
      ...(settings.jwtJwksUrl && { JWT_JWKS_URL: settings.jwtJwksUrl }),
      ...jwtClaimEnvironment(settings),
      // The stack's own user pool, when it has one, names the identity provider and the claim of the user id.
      ...this.identity?.jwtEnvironment(),
      TRUST_PROXY_HEADERS: String(settings.trustProxyHeaders),
    };
    const agentGroups = agentRouteGroups();
    const apiFunction = (
      name: string,
      handlers: Record<string, DispatchTarget>,
      routeKey: 'http' | 'websocket',
      extra: { environment?: Record<string, string>; prelude?: string } = {},
    ) => {
      // Live queries hold an execution up to 28 s each: capped, so that they cannot starve the daily run.
      const reserved = { 'live-query': settings.liveQueryConcurrency, ws: settings.agentChannelConcurrency }[name];
      // The agents' functions: untraced unless agentTracing, and their own lines from WARN up (one a heartbeat otherwise).
      const agent = agentGroups.has(name);
      const fn = new LogbookFunction(this, `${pascal(name)}Function`, {
        entry: writeDispatchEntry(name, handlers, { routeKey, prelude: extra.prelude }),
        description: `Logbook ${name}: ${Object.keys(handlers).join(', ')}`.slice(0, 256),
        // API Gateway answers 504 after 30 s; a live query waits up to 28 s for the agent.
        timeout: Duration.seconds(29),
        logRetention,
        environment: { ...apiEnvironment, ...extra.environment },
        reservedConcurrency: reserved || undefined,
        ...(agent && { tracing: settings.agentTracing, logLevel: 'WARN' as const }),
      });
      database.grantDataApi(fn, database.appSecret);
      fn.node.addDependency(database.migration);
      return fn;
    };

    const wsHandlers = Object.fromEntries(
      Object.entries(wsRoutes).map(([key, route]) => [key, { handler: route.handler }]),
    );
    const wsFunction = apiFunction('ws', wsHandlers, 'websocket');
    this.agentChannel = new AgentChannel(this, 'AgentChannel', {
      handler: wsFunction,
      throttle: throttles.webSocket,
      logRetention,
    });
    // The functions that post to (or close) agents' connections: the WebSocket routes and the live queries.
    const relayEnvironment = { WS_MANAGEMENT_ENDPOINT: this.agentChannel.managementEndpoint };
    wsFunction.addEnvironment('WS_MANAGEMENT_ENDPOINT', relayEnvironment.WS_MANAGEMENT_ENDPOINT);
    this.agentChannel.grantRelay(wsFunction);
    // Script runs and PSA deliveries: a queue and its worker; the functions that queue jobs send to it.
    const workQueue = new WorkQueue(this, 'WorkQueue', {
      logRetention,
      environment: { ...apiEnvironment, ...relayEnvironment },
    });
    database.grantDataApi(workQueue.worker, database.appSecret);
    workQueue.worker.node.addDependency(database.migration);
    this.agentChannel.grantRelay(workQueue.worker);
    workQueue.grantSend(wsFunction);
    workQueue.grantHeartbeats(wsFunction);

    const enrollmentSecret = settings.agentEnrollmentSecretArn
      ? Secret.fromSecretCompleteArn(this, 'AgentEnrollmentSecret', settings.agentEnrollmentSecretArn)
      : undefined;
    // Seals enrollment keys so that their deployment scripts can carry them (shared/auth/key-seal.ts): 43 random
    // letters and digits, which decode as base64 to the 32 bytes of an AES-256 key (about 252 bits of entropy).
    // Generated on the first deploy and kept: a new value leaves the keys sealed before it without a script key.
    const sealKey = new Secret(this, 'EnrollmentKeySealKey', {
      description:
        'Logbook: ENROLLMENT_KEY_SEAL_KEY, the AES-256 key (base64) sealing enrollment keys, PSA secrets and secret script defaults; read by the functions whose routes seal or open them and by the work queue worker',
      generateSecretString: { passwordLength: 43, excludePunctuation: true, includeSpace: false },
    });
    acknowledge(
      sealKey,
      'SMG4',
      'Not rotated: keys sealed under the old value could no longer be opened, and their deployment scripts would carry a placeholder instead of the key',
    );
    // Notification e-mails go out through SES from the verified sender: the worker sends them, and so does the route
    // that sends a channel's test.
    const sendsMail = (fn: LogbookFunction) => {
      if (!settings.notificationEmailFrom) return;
      fn.addEnvironment('NOTIFICATION_EMAIL_FROM', settings.notificationEmailFrom);
      fn.addToRolePolicy(
        new PolicyStatement({
          actions: ['ses:SendEmail', 'ses:SendRawEmail'],
          resources: [`arn:${this.partition}:ses:${this.region}:${this.account}:identity/*`],
          conditions: { StringEquals: { 'ses:FromAddress': settings.notificationEmailFrom } },
        }),
      );
      acknowledge(
        fn.role!,
        'IAM5[Resource::arn:<AWS::Partition>:ses:<AWS::Region>:<AWS::AccountId>:identity/*]',
        'SES identities: the sender may be verified as an address or as its domain; the condition pins the sender',
      );
    };
    sendsMail(workQueue.worker);
    // PSA deliveries sign with the integration's sealed secret.
    workQueue.worker.addEnvironment('ENROLLMENT_KEY_SEAL_KEY_ARN', sealKey.secretArn);
    sealKey.grantRead(workQueue.worker);
    const served = { ...routes, ...props.extraRoutes };
    const functions = new Map<string, LogbookFunction>();
    const groupFunctions = new Map<string, LogbookFunction>();
    for (const [group, { targets, grants }] of routeGroups()) {
      const enrolls = enrollmentSecret && grants.has('enrollment-secret');
      const seals = grants.has('seal-key');
      const relays = grants.has('agent-channel');
      const secretSettings = [
        ...(enrolls ? ['AGENT_ENROLLMENT_SECRET'] : []),
        ...(seals ? ['ENROLLMENT_KEY_SEAL_KEY'] : []),
      ];
      const prelude = [
        // Secrets are read from Secrets Manager at cold start, never kept in the function's configuration.
        ...(secretSettings.length
          ? [
              `import { loadSecretSettings } from ${JSON.stringify(join(projectRoot, 'shared/secrets-manager.ts'))};\nawait loadSecretSettings(${JSON.stringify(secretSettings)});`,
            ]
          : []),
        ...(grants.has('route-table') ? [routeTablePrelude()] : []),
      ];
      const fn = apiFunction(group, targets, 'http', {
        environment: {
          ...(relays && relayEnvironment),
          ...(enrolls && { AGENT_ENROLLMENT_SECRET_ARN: enrollmentSecret.secretArn }),
          ...(seals && { ENROLLMENT_KEY_SEAL_KEY_ARN: sealKey.secretArn }),
          // GET /audit-logs/anchors publishes the public key; the private key stays with the retention worker.
          ...(grants.has('anchor-public-key') && { AUDIT_ANCHOR_PUBLIC_KEY: this.anchorKey.publicKey }),
        },
        ...(prelude.length && { prelude: prelude.join('\n') }),
      });
      if (enrolls) enrollmentSecret.grantRead(fn);
      if (seals) sealKey.grantRead(fn);
      if (relays) this.agentChannel.grantRelay(fn);
      if (grants.has('send-mail')) sendsMail(fn);
      if (grants.has('user-logins')) this.identity?.grantLogins(fn);
      // Every API function may spool an audit row whose write failed (shared/audit/spool.ts); scripts and alerts
      // also queue their deliveries.
      workQueue.grantSend(fn);
      for (const key of Object.keys(targets)) functions.set(key, fn);
      groupFunctions.set(group, fn);
    }
    for (const [key, group] of Object.entries(props.extraRoutes ?? {})) functions.set(key, groupFunctions.get(group)!);
    const domain = (name?: string, certificateArn?: string) =>
      name && certificateArn ? { name, certificateArn } : undefined;
    if (settings.viewer)
      this.viewer = new Viewer(this, 'Viewer', {
        logRetention,
        domain: domain(settings.viewerDomainName, settings.viewerCertificateArn),
        apiDomainName: settings.apiDomainName,
        signIn: this.identity?.hostedSignIn(),
      });
    const corsOrigins = [...(this.viewer ? [this.viewer.origin] : []), ...extraOrigins(settings.viewerOrigin)];
    this.identity?.allowSignInTo(corsOrigins.map((origin) => `${origin}/`));
    this.restApi = new RestApi(this, 'RestApi', {
      routes: Object.fromEntries(Object.keys(served).map((key) => [key, { handler: key }])),
      defaultRoute: { handler: '$default' },
      functionOf: (key) => functions.get(key)!,
      corsOrigins,
      throttle: throttles.http,
      logRetention,
      domain: domain(settings.apiDomainName, settings.apiCertificateArn),
    });
    this.viewer?.publish(this.restApi.url);

    this.retention = new LogbookFunction(this, 'RetentionFunction', {
      entry: join(projectRoot, 'functions/retention/run.ts'),
      description: 'Logbook: the daily audit retention worker (role logbook_audit_admin)',
      timeout: Duration.minutes(15),
      logRetention,
      environment: database.connection(database.auditAdminSecret, 'AUDIT_ADMIN_DB_SECRET_ARN'),
    });
    database.grantDataApi(this.retention, database.auditAdminSecret);
    // Its login and its schema are the migration's: a deploy updates the worker only once both are in place.
    this.retention.node.addDependency(database.migration);
    this.anchorKey.grantSigning(this.retention);
    // The daily run arms the move of history rows still waiting in the lane (an import's own arm can be lost).
    workQueue.grantSend(this.retention);
    // A run whose attempts all failed (or that EventBridge could not deliver) lands here instead of being dropped.
    this.retentionFailures = new Queue(this, 'RetentionFailures', {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    acknowledge(
      this.retentionFailures,
      'SQS3',
      "This queue is itself the dead-letter destination of the daily run (Lambda's on-failure destination and EventBridge's dead-letter queue); nothing consumes it but an operator",
    );
    // Past what one run verifies, the integrity watch queues the day's stripes of older rows (shared/audit/watch-plan.ts)
    // on a queue of the retention worker's own: the audit-admin login stays with it alone. A job failing thrice lands
    // with the failed runs.
    const integrityJobs = new Queue(this, 'IntegrityJobs', {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      // Six times the worker's timeout, as Lambda's SQS event source asks.
      visibilityTimeout: Duration.minutes(90),
      deadLetterQueue: { queue: this.retentionFailures, maxReceiveCount: 3 },
    });
    this.retention.addEventSource(
      new SqsEventSource(integrityJobs, { batchSize: 1, maxConcurrency: 2, reportBatchItemFailures: true }),
    );
    integrityJobs.grantSendMessages(this.retention);
    this.retention.addEnvironment('INTEGRITY_QUEUE_URL', integrityJobs.queueUrl);
    this.retention.configureAsyncInvoke({
      retryAttempts: 2,
      maxEventAge: Duration.hours(6),
      onFailure: new SqsDestination(this.retentionFailures),
    });
    // The outside witness of the anchors: written by the anchor function only, read by GET /audit-logs/witness.
    const witness = new AnchorWitness(this, 'AnchorWitness', { retentionDays: settings.witnessRetentionDays });
    witness.grantPublish(this.retention);
    const streamsFunction = groupFunctions.get('audit-streams');
    if (streamsFunction) witness.grantRead(streamsFunction);
    // S3 destinations of audit streams: the worker delivering them puts objects into the buckets the setting names and
    // no other; the routes refuse a destination naming another.
    const buckets = streamBuckets(settings.auditStreamBuckets);
    for (const fn of [workQueue.worker, streamsFunction]) fn?.addEnvironment('AUDIT_STREAM_BUCKETS', buckets.join(','));
    if (buckets.length > 0) {
      workQueue.worker.addToRolePolicy(
        new PolicyStatement({
          actions: ['s3:PutObject'],
          resources: buckets.map((bucket) => `arn:${this.partition}:s3:::${bucket}/*`),
        }),
      );
      for (const bucket of buckets)
        acknowledge(
          workQueue.worker.role!,
          `IAM5[Resource::arn:<AWS::Partition>:s3:::${bucket}/*]`,
          "An audit stream's objects are named per organization and hour under its prefix: the grant is the named bucket's objects",
        );
    }
    if (settings.anchorIntervalMinutes > 0)
      new Rule(this, 'AnchorSchedule', {
        description: 'Logbook: anchors and witnesses every intact audit chain between daily runs',
        schedule: Schedule.rate(Duration.minutes(settings.anchorIntervalMinutes)),
        targets: [
          new LambdaFunction(this.retention, {
            event: RuleTargetInput.fromObject({ anchorOnly: true }),
            retryAttempts: 2,
            maxEventAge: Duration.hours(1),
            deadLetterQueue: this.retentionFailures,
          }),
        ],
      });
    new Rule(this, 'RetentionSchedule', {
      description: 'Logbook: runs the audit retention worker',
      schedule: Schedule.expression(settings.retentionSchedule),
      targets: [
        new LambdaFunction(this.retention, {
          retryAttempts: 2,
          maxEventAge: Duration.hours(6),
          deadLetterQueue: this.retentionFailures,
        }),
      ],
    });

    // The billing due run: generates (and with autoIssue issues) the invoices of due periods, as logbook_app.
    this.billingRun = new LogbookFunction(this, 'BillingRunFunction', {
      entry: join(projectRoot, 'functions/billing/run.ts'),
      description: 'Logbook: the daily billing due run (role logbook_app)',
      timeout: Duration.minutes(15),
      logRetention,
      environment: apiEnvironment,
    });
    database.grantDataApi(this.billingRun, database.appSecret);
    this.billingRun.node.addDependency(database.migration);
    workQueue.grantSend(this.billingRun);
    this.billingRun.configureAsyncInvoke({
      retryAttempts: 2,
      maxEventAge: Duration.hours(6),
      onFailure: new SqsDestination(this.retentionFailures),
    });
    new Rule(this, 'BillingSchedule', {
      description: 'Logbook: runs the billing due run',
      schedule: Schedule.expression(settings.billingSchedule),
      targets: [
        new LambdaFunction(this.billingRun, {
          retryAttempts: 2,
          maxEventAge: Duration.hours(6),
          deadLetterQueue: this.retentionFailures,
        }),
      ],
    });

    this.alarms = new Alarms(this, 'Alarms', {
      metricsNamespace: settings.metricsNamespace,
      serviceName: settings.serviceName,
      email: settings.alarmEmail,
    });
    this.addAlarms(settings);

    // Powertools: the service of logs, metrics and traces, and the metrics' namespace, the same in every function.
    for (const fn of this.node
      .findAll()
      .filter((child): child is LogbookFunction => child instanceof LogbookFunction)) {
      fn.addEnvironment('POWERTOOLS_SERVICE_NAME', settings.serviceName);
      fn.addEnvironment('POWERTOOLS_METRICS_NAMESPACE', settings.metricsNamespace);
    }

    new CfnOutput(this, 'HttpApiUrl', {
      description: 'Base URL of the HTTP API (routes under /api/v1)',
      value: this.restApi.url,
    });
    if (this.viewer) new CfnOutput(this, 'ViewerUrl', { description: 'The audit viewer', value: this.viewer.url });
    if (this.identity) {
      new CfnOutput(this, 'UserPoolId', {
        description: 'The Cognito user pool of the users (invite them with POST /users)',
        value: this.identity.userPool.userPoolId,
      });
      if (this.viewer)
        new CfnOutput(this, 'SignInUrl', {
          description: 'The web pages, leaving at once for the hosted sign-in page and returning signed in',
          value: this.identity.signInUrl(this.viewer.url),
        });
    }
    new CfnOutput(this, 'AuditAnchorKeyId', {
      description: 'Id of the key that signs the audit anchors (keep its public key when rotating)',
      value: this.anchorKey.keyId,
    });
    new CfnOutput(this, 'AuditAnchorPublicKey', {
      description: 'The Ed25519 public key (SPKI PEM) of the audit anchors',
      value: this.anchorKey.publicKey,
    });
    new CfnOutput(this, 'WebSocketUrl', {
      description: "The agents' WebSocket endpoint",
      value: this.agentChannel.stage.url,
    });
    new CfnOutput(this, 'AlarmTopicArn', {
      description: 'The SNS topic every alarm notifies (subscribe to it, or deploy with -c alarmEmail=…)',
      value: this.alarms.topic.topicArn,
    });
    new CfnOutput(this, 'RetentionFailuresQueueUrl', {
      description: 'Daily runs that failed after their retries (docs/operations.md "Re-running a failed day")',
      value: this.retentionFailures.queueUrl,
    });
    new CfnOutput(this, 'RetentionFunctionName', { value: this.retention.functionName });
    new CfnOutput(this, 'DatabaseClusterArn', { value: database.cluster.clusterArn });
    new CfnOutput(this, 'OwnerSecretArn', {
      description: 'The cluster administrator (migrations)',
      value: database.ownerSecret.secretArn,
    });
  }
  /** The alarms of docs/operations.md "Alarms", each with its meaning and what to do. */
  private addAlarms(settings: LogbookSettings): void {
    const { alarms } = this;
    const hour = Duration.hours(1);
    alarms.add('AuditChainBreaks', {
      metric: alarms.metric('AuditChainBreaks', hour),
      threshold: 1,
      meaning:
        "The integrity watch found an organization's audit chain broken (a row changed, missing or out of order).",
      action:
        'Run GET /api/v1/audit-logs/verify for the organization named in the retention log, compare with your signed anchors, treat as a security incident.',
    });
    alarms.add('AuditStreamLag', {
      metric: alarms.metric('AuditStreamLagSeconds', Duration.minutes(5), 'Maximum'),
      threshold: settings.auditStreamLagAlarmSeconds,
      meaning: 'An audit stream has rows older than the lag threshold not delivered (its receiver fails or is slow).',
      action:
        'GET /api/v1/audit-streams/{id}/status names the organization and the last error; fix the receiver, the cursor catches up by itself.',
    });
    alarms.add('AuditRetentionFailures', {
      metric: alarms.metric('AuditRetentionFailures', hour),
      threshold: 1,
      meaning: 'The daily run could not prune at least one organization (the others were pruned).',
      action: "Read the retention function's log for the organization and the error; the next run retries it.",
    });
    alarms.add('RetentionErrors', {
      metric: this.retention.metricErrors({ period: hour }),
      threshold: 1,
      meaning: 'An invocation of the retention function failed (Lambda retries it twice).',
      action: "Read the retention function's log; a run that fails all its attempts lands in the failures queue.",
    });
    alarms.add('RetentionDidNotRun', {
      metric: this.retention.metricInvocations({ period: hour }),
      threshold: 1,
      below: true,
      periods: 26,
      missing: TreatMissingData.BREACHING,
      meaning: 'The daily retention run has not run for 26 hours.',
      action:
        'Check the RetentionSchedule rule is enabled and the function exists; run the day again (docs/operations.md "Re-running a failed day").',
    });
    alarms.add('BillingRunErrors', {
      metric: this.billingRun.metricErrors({ period: hour }),
      threshold: 1,
      meaning: 'An invocation of the billing due run failed (Lambda retries it twice).',
      action:
        "Read the billing run's log; a run that fails all its attempts lands in the failures queue, and the next day's run generates what is still due.",
    });
    alarms.add('BillingDidNotRun', {
      metric: this.billingRun.metricInvocations({ period: hour }),
      threshold: 1,
      below: true,
      periods: 26,
      missing: TreatMissingData.BREACHING,
      meaning: 'The daily billing due run has not run for 26 hours: invoices due meanwhile were not generated.',
      action:
        'Check the BillingSchedule rule is enabled and the function exists; the next run catches up every period still due, or invoke the function now (docs/billing.md "The daily due run").',
    });
    alarms.add('RetentionFailuresQueued', {
      metric: this.retentionFailures.metricApproximateNumberOfMessagesVisible({ period: Duration.minutes(5) }),
      threshold: 1,
      meaning: 'A daily run failed all its attempts (or could not be delivered) and waits in the failures queue.',
      action:
        'Fix the cause from the function log, run the day again with its asOf, then delete the message (docs/operations.md "Re-running a failed day").',
    });
    alarms.add('AuditWriteFailures', {
      metric: alarms.metric('AuditWriteFailures'),
      threshold: 1,
      meaning: "A route's audit row could not be written (the request itself succeeded).",
      action: "Read the function's log for the action and the error; check the database's health and capacity.",
    });
    alarms.add('AuditEventsFailedPermanently', {
      metric: alarms.metric('AuditEventsFailedPermanently'),
      threshold: 1,
      meaning:
        "An audit event is missing from the trail: its write failed and it could not be spooled, or its spooled replay failed five times and waits in the work queue's dead-letter queue.",
      action:
        'Read the function\'s log ([audit] lines) for the action and the error; fix the database, then redrive the work queue\'s dead-letter queue (docs/audit.md "Writers and the audit spool").',
    });
    alarms.add('UnhandledErrors', {
      metric: alarms.metric('UnhandledErrors'),
      threshold: 1,
      meaning: 'A request ended in 500 (a fault, not a refused request).',
      action:
        "Find the request id in the function's log and X-Ray trace; a fault repeating after a deploy calls for a rollback.",
    });
    alarms.add('DatabaseUnavailable', {
      metric: alarms.metric('DatabaseUnavailable'),
      threshold: 1,
      periods: 2,
      meaning: 'Requests ended in 503 for 10 minutes: Aurora did not answer (or resume) in time.',
      action:
        'Check the cluster in the RDS console (status, capacity at maxCapacityAcu, events); raise maxCapacityAcu if it is pinned there.',
    });
    const api = this.restApi.api;
    alarms.add('HttpApi5xxRate', {
      metric: new MathExpression({
        expression: 'IF(requests > 0, 100 * errors / requests, 0)',
        usingMetrics: {
          errors: api.metricServerError({ period: Duration.minutes(5) }),
          requests: api.metricCount({ period: Duration.minutes(5) }),
        },
        label: 'HTTP API 5xx (% of requests)',
        period: Duration.minutes(5),
      }),
      threshold: 5,
      periods: 2,
      meaning: "5% or more of the HTTP API's requests ended in 5xx for 10 minutes.",
      action:
        'See UnhandledErrors and DatabaseUnavailable, and the access log (status, integrationError) for the routes concerned.',
    });
    const ws = (metricName: string) =>
      new Metric({
        namespace: 'AWS/ApiGateway',
        metricName,
        dimensionsMap: { ApiId: this.agentChannel.api.apiId, Stage: this.agentChannel.stage.stageName },
        statistic: 'Sum',
        period: Duration.minutes(5),
      });
    alarms.add('WebSocketApiErrorRate', {
      metric: new MathExpression({
        expression: 'IF(calls > 0, 100 * (integration + execution) / calls, 0)',
        usingMetrics: {
          integration: ws('IntegrationError'),
          execution: ws('ExecutionError'),
          calls: new MathExpression({
            expression: 'connects + messages',
            usingMetrics: { connects: ws('ConnectCount'), messages: ws('MessageCount') },
          }),
        },
        label: "Agents' WebSocket API errors (% of connects and messages)",
        period: Duration.minutes(5),
      }),
      threshold: 5,
      periods: 2,
      meaning: "5% or more of the agents' connects and messages failed in the integration for 10 minutes.",
      action: "Read the ws function's log; check the database (connects look agents up) and the function's throttles.",
    });
    // A fleet nearing the stages' throttles (sized from expectedDevices): 80 % of the rate, over 5 minutes.
    const throttles = apiThrottles(settings);
    const near = (rate: number) => Math.ceil(0.8 * rate * 300);
    alarms.add('HttpApiNearThrottle', {
      metric: api.metricCount({ period: Duration.minutes(5) }),
      threshold: near(throttles.http.rateLimit),
      meaning: `The HTTP API took 80 % or more of its throttle (${throttles.http.rateLimit} requests a second) over 5 minutes: more requests are refused with 429.`,
      action:
        'Raise expectedDevices to the fleet you run (or throttleRateLimit) and deploy; check the access log for a client looping.',
    });
    alarms.add('WebSocketNearThrottle', {
      metric: new MathExpression({
        expression: 'connects + messages',
        usingMetrics: { connects: ws('ConnectCount'), messages: ws('MessageCount') },
        label: "Agents' WebSocket connects and messages",
        period: Duration.minutes(5),
      }),
      threshold: near(throttles.webSocket.rateLimit),
      meaning: `The agents' WebSocket API took 80 % or more of its throttle (${throttles.webSocket.rateLimit} a second) over 5 minutes: more connects and messages are refused.`,
      action: 'Raise expectedDevices to the fleet you run (or throttleRateLimit) and deploy.',
    });
    alarms.add('LambdaThrottles', {
      metric: new Metric({
        namespace: 'AWS/Lambda',
        metricName: 'Throttles',
        statistic: 'Sum',
        period: Duration.minutes(5),
      }),
      threshold: 1,
      meaning:
        "Lambda refused invocations in this account and region: a function's reserved concurrency or the account's pool ran out.",
      action:
        'See which function in the Lambda console; raise liveQueryConcurrency or agentChannelConcurrency, or ask AWS for a higher concurrency quota.',
    });
  }
}

/** The claim-name settings that are set, as the functions read them (shared/auth/jwt.ts). */
function jwtClaimEnvironment(settings: LogbookSettings): Record<string, string> {
  const variables = {
    JWT_CLAIM_ROLE: settings.jwtClaimRole,
    JWT_CLAIM_PARTNER_ID: settings.jwtClaimPartnerId,
    JWT_CLAIM_ORG_IDS: settings.jwtClaimOrgIds,
    JWT_CLAIM_SCOPE: settings.jwtClaimScope,
    JWT_CLAIM_USER_ID: settings.jwtClaimUserId,
  };
  return Object.fromEntries(Object.entries(variables).filter((entry): entry is [string, string] => !!entry[1]));
}
