import { join } from 'node:path';
import { CfnOutput, Duration, Stack, type StackProps } from 'aws-cdk-lib';
import { Rule, Schedule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import type { Construct } from 'constructs';
import { defaultRoute, routes, wsRoutes } from '#functions/routes.ts';
import { AgentChannel } from './agent-channel.ts';
import { AnchorKey } from './anchor-key.ts';
import { Database } from './database.ts';
import { LogbookFunction, projectRoot, writeDispatchEntry } from './functions.ts';
import { RestApi } from './http-api.ts';
import { powertoolsLayer } from './powertools.ts';
import { type LogbookSettings, settingsFromContext } from './settings.ts';
import { Viewer } from './viewer.ts';

export interface LogbookStackProps extends StackProps {
  /** Overrides of the settings otherwise read from CDK context. */
  settings?: Partial<LogbookSettings>;
}

/** The route groups of the table: one Lambda per folder of functions/ (`hierarchy`, `audit`, …), route key → handler module. */
export function routeGroups(table: Record<string, { handler: string }>): Map<string, Record<string, string>> {
  const groups = new Map<string, Record<string, string>>();
  for (const [key, { handler }] of Object.entries(table)) {
    const group = handler.split('/')[0]!;
    groups.set(group, { ...groups.get(group), [key]: handler });
  }
  return groups;
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

/** Log retention in days as CloudWatch accepts it. */
function retentionDays(days: number): RetentionDays {
  if (!Object.values(RetentionDays).includes(days))
    throw new Error(
      `context logRetentionDays must be one of CloudWatch's retention periods (1, 3, 5, 7, 14, 30, 60, 90, …), not ${days}`,
    );
  return days as RetentionDays;
}

/**
 * Everything Logbook runs in AWS (DESIGN.md "Shape"), environment-agnostic: the HTTP API with one Lambda per route
 * group, the agents' WebSocket API, Aurora PostgreSQL Serverless v2 reached through the Data API, the migration
 * custom resource, the daily retention worker with its anchor signing key, and the audit viewer on S3 and
 * CloudFront. Nothing costs money while idle but the secrets, the stored data and logs (README "Deploy").
 */
export class LogbookStack extends Stack {
  readonly database: Database;
  readonly restApi: RestApi;
  readonly agentChannel: AgentChannel;
  readonly retention: LogbookFunction;
  readonly anchorKey: AnchorKey;
  readonly viewer?: Viewer;

  constructor(scope: Construct, id: string, props: LogbookStackProps = {}) {
    super(scope, id, props);
    const settings: LogbookSettings = { ...settingsFromContext(this.node), ...props.settings };
    const logRetention = retentionDays(settings.logRetentionDays);
    const throttle = { rateLimit: settings.throttleRateLimit, burstLimit: settings.throttleBurstLimit };
    // Before any function: each of them runs with this one layer.
    powertoolsLayer(this, settings.powertoolsLayerArn);

    this.database = new Database(this, 'Database', { ...settings, logRetention });
    const database = this.database;
    this.anchorKey = new AnchorKey(this, 'AnchorKey', { generation: settings.anchorKeyGeneration, logRetention });

    const apiEnvironment: Record<string, string> = {
      ...database.connection(database.appSecret, 'APP_DB_SECRET_ARN'),
      JWT_ISSUER: settings.jwtIssuer,
      JWT_AUDIENCE: settings.jwtAudience,
      ...(settings.jwtJwksUrl && { JWT_JWKS_URL: settings.jwtJwksUrl }),
      TRUST_PROXY_HEADERS: String(settings.trustProxyHeaders),
    };
    const apiFunction = (
      name: string,
      handlers: Record<string, string>,
      routeKey: 'http' | 'websocket',
      extra: { environment?: Record<string, string>; prelude?: string } = {},
    ) => {
      const fn = new LogbookFunction(this, `${pascal(name)}Function`, {
        entry: writeDispatchEntry(name, handlers, { routeKey, prelude: extra.prelude }),
        description: `Logbook ${name}: ${Object.keys(handlers).join(', ')}`.slice(0, 256),
        // API Gateway answers 504 after 30 s; a live query waits up to 28 s for the agent.
        timeout: Duration.seconds(29),
        logRetention,
        environment: { ...apiEnvironment, ...extra.environment },
      });
      database.grantDataApi(fn, database.appSecret);
      fn.node.addDependency(database.migration);
      return fn;
    };

    const wsHandlers = Object.fromEntries(Object.entries(wsRoutes).map(([key, route]) => [key, route.handler]));
    const wsFunction = apiFunction('ws', wsHandlers, 'websocket');
    this.agentChannel = new AgentChannel(this, 'AgentChannel', { handler: wsFunction, throttle, logRetention });
    // The functions that post to (or close) agents' connections: the WebSocket routes and the live queries.
    const relayEnvironment = { WS_MANAGEMENT_ENDPOINT: this.agentChannel.managementEndpoint };
    wsFunction.addEnvironment('WS_MANAGEMENT_ENDPOINT', relayEnvironment.WS_MANAGEMENT_ENDPOINT);
    this.agentChannel.grantRelay(wsFunction);

    const enrollmentSecret = settings.agentEnrollmentSecretArn
      ? Secret.fromSecretCompleteArn(this, 'AgentEnrollmentSecret', settings.agentEnrollmentSecretArn)
      : undefined;
    const functions = new Map<string, LogbookFunction>();
    for (const [group, handlers] of routeGroups({ ...routes, $default: defaultRoute })) {
      const enrolls = enrollmentSecret && Object.values(handlers).includes('hierarchy/agents-enroll');
      const fn = apiFunction(group, handlers, 'http', {
        environment: {
          ...(group === 'live-query' && relayEnvironment),
          ...(enrolls && { AGENT_ENROLLMENT_SECRET_ARN: enrollmentSecret.secretArn }),
          // GET /audit-logs/anchors publishes the public key; the private key stays with the retention worker.
          ...(Object.values(handlers).includes('audit/anchors-list') && {
            AUDIT_ANCHOR_PUBLIC_KEY: this.anchorKey.publicKey,
          }),
        },
        // The enrollment secret is read from Secrets Manager at cold start, never kept in the function's configuration.
        ...(enrolls && {
          prelude: `import { loadSecretSettings } from ${JSON.stringify(join(projectRoot, 'shared/secrets-manager.ts'))};\nawait loadSecretSettings(['AGENT_ENROLLMENT_SECRET']);`,
        }),
      });
      if (enrolls) enrollmentSecret.grantRead(fn);
      if (group === 'live-query') this.agentChannel.grantRelay(fn);
      for (const handler of Object.values(handlers)) functions.set(handler, fn);
    }
    if (settings.viewer) this.viewer = new Viewer(this, 'Viewer', { logRetention });
    const corsOrigins = [...(this.viewer ? [this.viewer.origin] : []), ...extraOrigins(settings.viewerOrigin)];
    this.restApi = new RestApi(this, 'RestApi', {
      routes,
      defaultRoute,
      functionOf: (handler) => functions.get(handler)!,
      corsOrigins,
      throttle,
      logRetention,
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
    new Rule(this, 'RetentionSchedule', {
      description: 'Logbook: runs the audit retention worker',
      schedule: Schedule.expression(settings.retentionSchedule),
      targets: [new LambdaFunction(this.retention, { retryAttempts: 2, maxEventAge: Duration.hours(6) })],
    });

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
    new CfnOutput(this, 'DatabaseClusterArn', { value: database.cluster.clusterArn });
    new CfnOutput(this, 'OwnerSecretArn', {
      description: 'The cluster administrator (migrations)',
      value: database.ownerSecret.secretArn,
    });
  }
}
