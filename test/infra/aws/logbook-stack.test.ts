/**
 * The CDK stack (infra/aws), read as CloudFormation with aws-cdk-lib/assertions: what it deploys, what each function
 * may do, and cdk-nag's AwsSolutions checks. Bundling is skipped here (`npm run synth` and `npm run bench:lambda`
 * bundle for real).
 */
import { App, Validations } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { describe, expect, it } from 'vitest';
import { routes, wsRoutes } from '#functions/routes.ts';
import { LogbookStack, type LogbookStackProps } from '#infra/aws/logbook-stack.ts';

type Resource = { Type: string; Properties: Record<string, any>; DeletionPolicy?: string; Metadata?: Record<string, unknown> };

function synth(props: LogbookStackProps = {}) {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new LogbookStack(app, 'Logbook', props);
  const template = Template.fromStack(stack);
  const resources = template.toJSON().Resources as Record<string, Resource>;
  const ofType = (type: string) => Object.entries(resources).filter(([, r]) => r.Type === type);
  const functionId = (description: string) => ofType('AWS::Lambda::Function').find(([, r]) => String(r.Properties.Description).includes(description))![0];
  /** The statements of the policies attached to a function's role. */
  const statementsOf = (fnId: string) => {
    const role = resources[fnId]!.Properties.Role['Fn::GetAtt'][0] as string;
    return ofType('AWS::IAM::Policy')
      .filter(([, p]) => p.Properties.Roles.some((r: { Ref: string }) => r.Ref === role))
      .flatMap(([, p]) => p.Properties.PolicyDocument.Statement as { Action: string | string[]; Resource: unknown }[]);
  };
  return { stack, template, resources, ofType, functionId, statementsOf };
}

const deployed = synth();
const refOf = (prefix: string) => Object.keys(deployed.resources).find((id) => id.startsWith(prefix))!;
const apiFunctions = deployed.ofType('AWS::Lambda::Function').filter(([, r]) => /^Logbook (?!.*retention)/.test(r.Properties.Description));

describe('the CDK stack', () => {
  it('synthesizes with cdk-nag\'s AwsSolutions checks and no unacknowledged finding, each acknowledgment with its reason', { timeout: 60_000 }, () => {
    for (const settings of [{}, { deletionProtection: false, snapshotOnDelete: false, viewerOrigin: 'https://viewer.example.com', agentEnrollmentSecretArn: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:logbook-enrollment-AbCdEf' }]) {
      const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
      const stack = new LogbookStack(app, 'Logbook', { settings });
      Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
      expect(() => app.synth()).not.toThrow();
      const acknowledged = stack.node
        .findAll()
        .flatMap((c) => c.node.metadata.filter((m) => m.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY).flatMap((m) => Object.values(m.data as Record<string, string>)));
      expect(acknowledged.length).toBeGreaterThan(0);
      for (const reason of acknowledged) expect(reason.length).toBeGreaterThan(30);
    }
  });

  it('runs Aurora PostgreSQL 17 Serverless v2 with the Data API, pausing at 0 ACU, encrypted, protected and snapshotted on delete', () => {
    deployed.template.hasResource('AWS::RDS::DBCluster', {
      DeletionPolicy: 'Snapshot',
      Properties: Match.objectLike({
        Engine: 'aurora-postgresql',
        EngineVersion: Match.stringLikeRegexp('^17\\.'),
        EnableHttpEndpoint: true,
        StorageEncrypted: true,
        DeletionProtection: true,
        ServerlessV2ScalingConfiguration: { MinCapacity: 0, MaxCapacity: 4, SecondsUntilAutoPause: 300 },
      }),
    });
    deployed.template.hasResourceProperties('AWS::RDS::DBInstance', { DBInstanceClass: 'db.serverless', PubliclyAccessible: false });
  });

  it('lets a test stage switch deletion protection and the final snapshot off, and set the capacity', () => {
    const test = synth({ settings: { deletionProtection: false, snapshotOnDelete: false, maxCapacityAcu: 2 } });
    test.template.hasResource('AWS::RDS::DBCluster', {
      DeletionPolicy: 'Delete',
      Properties: Match.objectLike({ DeletionProtection: false, ServerlessV2ScalingConfiguration: Match.objectLike({ MinCapacity: 0, MaxCapacity: 2 }) }),
    });
  });

  it('keeps the database in isolated subnets of a VPC without NAT gateway or internet gateway, open to no one', () => {
    deployed.template.resourceCountIs('AWS::EC2::NatGateway', 0);
    deployed.template.resourceCountIs('AWS::EC2::InternetGateway', 0);
    for (const [, subnet] of deployed.ofType('AWS::EC2::Subnet')) expect(subnet.Properties.MapPublicIpOnLaunch).toBe(false);
    deployed.template.hasResourceProperties('AWS::EC2::SecurityGroup', { SecurityGroupIngress: Match.absent() });
    deployed.template.resourceCountIs('AWS::EC2::SecurityGroupIngress', 0);
    for (const [, fn] of deployed.ofType('AWS::Lambda::Function')) expect(fn.Properties.VpcConfig).toBeUndefined();
  });

  it('keeps one secret per database role: the owner (the cluster administrator), logbook_app and logbook_audit_admin', () => {
    const secrets = deployed.ofType('AWS::SecretsManager::Secret').map(([, s]) => JSON.parse(s.Properties.GenerateSecretString.SecretStringTemplate).username);
    expect(secrets.sort()).toEqual(['logbook_admin', 'logbook_app', 'logbook_audit_admin']);
    for (const [, s] of deployed.ofType('AWS::SecretsManager::Secret')) expect(s.Properties.KmsKeyId).toBeUndefined();
  });

  it('grants the Data API on this cluster only and each secret by its ARN, never a wildcard (no grantDataApiAccess)', () => {
    const cluster = refOf('DatabaseCluster5');
    for (const [id] of deployed.ofType('AWS::Lambda::Function').filter(([id]) => !id.startsWith('LogRetention'))) {
      for (const statement of deployed.statementsOf(id)) {
        const actions = [statement.Action].flat();
        if (actions.some((a) => a.startsWith('rds-data:'))) expect(JSON.stringify(statement.Resource)).toContain(`"Ref":"${cluster}"`);
        if (actions.some((a) => a.startsWith('rds-data:') || a.startsWith('secretsmanager:'))) {
          expect(statement.Resource).not.toBe('*');
          expect(JSON.stringify(statement.Resource)).not.toContain('*');
        }
      }
    }
  });

  it('lets the retention function alone of the serving functions read the audit-admin secret, and the API functions only the app secret', () => {
    const secretsReadBy = (fnId: string) =>
      deployed
        .statementsOf(fnId)
        .filter((s) => [s.Action].flat().includes('secretsmanager:GetSecretValue'))
        .map((s) => (s.Resource as { Ref: string }).Ref);
    const appSecret = refOf('DatabaseAppSecret');
    const auditAdminSecret = refOf('DatabaseAuditAdminSecret');
    expect(secretsReadBy(deployed.functionId('retention worker'))).toEqual([auditAdminSecret]);
    expect(apiFunctions.length).toBe(9);
    for (const [id] of apiFunctions) expect(secretsReadBy(id)).toEqual([appSecret]);
    // The migration sets the roles' passwords from their secrets, so it reads them too (and the owner's, to connect).
    expect(secretsReadBy(deployed.functionId('applies the SQL migrations')).sort()).toEqual([refOf('DatabaseClusterSecretAttachment'), appSecret, auditAdminSecret].sort());
  });

  it('runs the migration custom resource on every deploy, as the owner, after the cluster exists', () => {
    deployed.template.hasResource('Custom::LogbookSchema', {
      Properties: { ServiceToken: { 'Fn::GetAtt': [deployed.functionId('applies the SQL migrations'), 'Arn'] }, deployedAt: Match.anyValue() },
      DependsOn: Match.arrayWith([Match.stringLikeRegexp('^DatabaseCluster')]),
    });
    const migrate = deployed.resources[deployed.functionId('applies the SQL migrations')]!;
    expect(Object.keys(migrate.Properties.Environment.Variables)).toEqual(expect.arrayContaining(['DB_CLUSTER_ARN', 'DB_NAME', 'OWNER_DB_SECRET_ARN', 'APP_DB_SECRET_ARN', 'AUDIT_ADMIN_DB_SECRET_ARN']));
  });

  it('serves every route of functions/routes.ts, and no other, from the route table', () => {
    const httpApi = deployed.ofType('AWS::ApiGatewayV2::Api').find(([, a]) => a.Properties.ProtocolType === 'HTTP')![0];
    const deployedRoutes = deployed
      .ofType('AWS::ApiGatewayV2::Route')
      .filter(([, r]) => r.Properties.ApiId.Ref === httpApi)
      .map(([, r]) => r.Properties.RouteKey as string);
    expect(deployedRoutes.sort()).toEqual(Object.keys(routes).sort());
  });

  it('runs each route group in a Lambda of its own: Node.js 22 on arm64, with a log group that expires', () => {
    const groups = new Set(Object.values(routes).map((r) => r.handler.split('/')[0]));
    expect(apiFunctions.map(([, fn]) => /^Logbook ([\w-]+):/.exec(fn.Properties.Description)?.[1]).sort()).toEqual([...groups, 'ws'].sort());
    for (const [, fn] of deployed.ofType('AWS::Lambda::Function').filter(([id]) => !id.startsWith('LogRetention'))) {
      expect(fn.Properties).toMatchObject({ Runtime: 'nodejs22.x', Architectures: ['arm64'], Handler: 'index.handler', TracingConfig: { Mode: 'Active' } });
      expect(fn.Properties.LoggingConfig.LogGroup).toBeDefined();
    }
    for (const [, group] of deployed.ofType('AWS::Logs::LogGroup')) expect(group.Properties.RetentionInDays).toBe(30);
  });

  it('configures the functions without a secret value in their environment', () => {
    for (const [, fn] of deployed.ofType('AWS::Lambda::Function')) {
      const variables = JSON.stringify(fn.Properties.Environment?.Variables ?? {});
      expect(variables).not.toMatch(/resolve:secretsmanager|PASSWORD|JWT_SECRET"|"AGENT_ENROLLMENT_SECRET"/);
    }
    const configured = synth({
      settings: { jwtJwksUrl: 'https://idp.example.com/.well-known/jwks.json', jwtIssuer: 'https://idp.example.com/', jwtAudience: 'rmm', trustProxyHeaders: true, agentEnrollmentSecretArn: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:logbook-enrollment-AbCdEf' },
    });
    const hierarchy = configured.resources[configured.functionId('Logbook hierarchy')]!;
    expect(hierarchy.Properties.Environment.Variables).toMatchObject({
      JWT_JWKS_URL: 'https://idp.example.com/.well-known/jwks.json',
      JWT_ISSUER: 'https://idp.example.com/',
      JWT_AUDIENCE: 'rmm',
      TRUST_PROXY_HEADERS: 'true',
      AGENT_ENROLLMENT_SECRET_ARN: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:logbook-enrollment-AbCdEf',
    });
    const reads = configured.statementsOf(configured.functionId('Logbook hierarchy')).filter((s) => s.Resource === 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:logbook-enrollment-AbCdEf');
    expect(reads).toHaveLength(1);
    expect(configured.resources[configured.functionId('Logbook audit')]!.Properties.Environment.Variables.AGENT_ENROLLMENT_SECRET_ARN).toBeUndefined();
  });

  it('allows the viewer\'s origin by CORS when one is set, and none otherwise', () => {
    const httpApi = (s: ReturnType<typeof synth>) => s.ofType('AWS::ApiGatewayV2::Api').find(([, a]) => a.Properties.ProtocolType === 'HTTP')![1];
    expect(httpApi(deployed).Properties.CorsConfiguration).toBeUndefined();
    const withViewer = synth({ settings: { viewerOrigin: 'https://viewer.example.com' } });
    expect(httpApi(withViewer).Properties.CorsConfiguration).toMatchObject({ AllowOrigins: ['https://viewer.example.com'], AllowHeaders: expect.arrayContaining(['authorization']) });
  });

  it('throttles and logs both API stages', () => {
    for (const [, stage] of deployed.ofType('AWS::ApiGatewayV2::Stage')) {
      expect(stage.Properties).toMatchObject({ AutoDeploy: true, DefaultRouteSettings: { ThrottlingRateLimit: 100, ThrottlingBurstLimit: 200 }, AccessLogSettings: { DestinationArn: expect.anything() } });
    }
  });

  it('opens the agents\' WebSocket API with $connect, $disconnect and $default on its stage, and lets only the relays post to its connections', () => {
    const wsApi = deployed.ofType('AWS::ApiGatewayV2::Api').find(([, a]) => a.Properties.ProtocolType === 'WEBSOCKET')![0];
    const keys = deployed
      .ofType('AWS::ApiGatewayV2::Route')
      .filter(([, r]) => r.Properties.ApiId.Ref === wsApi)
      .map(([, r]) => r.Properties.RouteKey);
    expect(keys.sort()).toEqual(Object.keys(wsRoutes).sort());
    deployed.template.hasResourceProperties('AWS::ApiGatewayV2::Stage', { ApiId: { Ref: wsApi }, StageName: 'live' });
    const relays = deployed.ofType('AWS::Lambda::Function').filter(([id]) => deployed.statementsOf(id).some((s) => [s.Action].flat().includes('execute-api:ManageConnections')));
    expect(relays.map(([, fn]) => /^Logbook ([\w-]+):/.exec(fn.Properties.Description)![1]).sort()).toEqual(['live-query', 'ws']);
    for (const [id] of relays) {
      const grant = deployed.statementsOf(id).find((s) => [s.Action].flat().includes('execute-api:ManageConnections'))!;
      expect(JSON.stringify(grant.Resource)).toContain(`{"Ref":"${wsApi}"},"/live/*/@connections/*"`);
      expect(deployed.resources[id]!.Properties.Environment.Variables.WS_MANAGEMENT_ENDPOINT).toBeDefined();
    }
  });

  it('runs the retention worker daily from an EventBridge schedule, on a configurable schedule', () => {
    deployed.template.hasResourceProperties('AWS::Events::Rule', {
      ScheduleExpression: 'cron(15 3 * * ? *)',
      Targets: [Match.objectLike({ Arn: { 'Fn::GetAtt': [deployed.functionId('retention worker'), 'Arn'] } })],
    });
    synth({ settings: { retentionSchedule: 'rate(12 hours)' } }).template.hasResourceProperties('AWS::Events::Rule', { ScheduleExpression: 'rate(12 hours)' });
  });

  it('reads its settings from CDK context, and refuses values Aurora or CloudWatch would not take', () => {
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [], maxCapacityAcu: '8', trustProxyHeaders: 'true', logRetentionDays: '90' } });
    const stack = new LogbookStack(app, 'Logbook');
    const template = Template.fromStack(stack);
    template.hasResourceProperties('AWS::RDS::DBCluster', { ServerlessV2ScalingConfiguration: Match.objectLike({ MaxCapacity: 8 }) });
    template.hasResourceProperties('AWS::Logs::LogGroup', { RetentionInDays: 90 });
    expect(() => new LogbookStack(new App({ context: { maxCapacityAcu: '0.25' } }), 'Bad')).toThrow(/maxCapacityAcu/);
    expect(() => new LogbookStack(new App({ context: { logRetentionDays: '45' } }), 'Bad')).toThrow(/logRetentionDays/);
    expect(() => new LogbookStack(new App({ context: { deletionProtection: 'no' } }), 'Bad')).toThrow(/deletionProtection/);
  });
});
