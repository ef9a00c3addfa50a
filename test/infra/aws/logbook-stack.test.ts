/**
 * The CDK stack (infra/aws), read as CloudFormation with aws-cdk-lib/assertions: what it deploys, what each function
 * may do, and cdk-nag's AwsSolutions checks. Bundling is skipped here (`npm run synth` and `npm run bench:lambda`
 * bundle for real).
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, Stack, Validations } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { routes, wsRoutes } from '#functions/routes.ts';
import { agentRouteGroups, LogbookStack, routeGroups } from '#infra/aws/logbook-stack.ts';
import { guardExceptions } from '#infra/aws/policy-checks.ts';
import { powertoolsLayerParameter, powertoolsPackages, powertoolsVersion } from '#infra/aws/powertools.ts';
import { buildViewerSite } from '#infra/aws/viewer.ts';
import { jwtJwksUrl, synth } from '#test/support/stack.ts';

// Each configuration this file reads is synthesized once, before the tests and outside their time limits. The policy
// checks of `npm run synth` (cfn-guard takes seconds of CPU a template) run on the two that hold every resource kind:
// the default stack and the one with every option; the other configurations change settings, not resources.
const deployed = synth({}, 'Logbook', { policyChecks: true });
const everyOption = {
  // An agent-only stage: no identity provider.
  jwtJwksUrl: undefined,
  allowNoUserAuth: true,
  alarmEmail: 'ops@example.com',
  notificationEmailFrom: 'alerts@msp.example.com',
  backupPlan: true,
  apiDomainName: 'api.logbook.example.com',
  apiCertificateArn: 'arn:aws:acm:eu-west-1:123456789012:certificate/11111111-2222-3333-4444-555555555555',
  viewerDomainName: 'audit.logbook.example.com',
  viewerCertificateArn: 'arn:aws:acm:us-east-1:123456789012:certificate/11111111-2222-3333-4444-555555555555',
  expectedDevices: 10_000,
  agentTracing: true,
  auditStreamBuckets: 'acme-audit-archive, acme-siem-drop',
};
const withEveryOption = synth({ settings: everyOption }, 'Logbook', { policyChecks: true });
/** A test stage that sets every other setting a test reads. */
const configured = synth(
  {
    settings: {
      deletionProtection: false,
      snapshotOnDelete: false,
      maxCapacityAcu: 2,
      anchorKeyGeneration: 2,
      serviceName: 'rmm-logbook',
      metricsNamespace: 'Rmm/Logbook',
      powertoolsLayerArn: 'arn:aws:lambda:eu-west-1:094274105915:layer:AWSLambdaPowertoolsTypeScriptV2:48',
      jwtJwksUrl: 'https://idp.example.com/.well-known/jwks.json',
      jwtIssuer: 'https://idp.example.com/',
      jwtAudience: 'rmm',
      jwtClaimRole: 'roles',
      jwtClaimOrgIds: 'extn.logbookOrgId',
      trustProxyHeaders: true,
      agentEnrollmentSecretArn: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:logbook-enrollment-AbCdEf',
      viewerOrigin: 'http://localhost:5173, https://audit.example.com',
      retentionSchedule: 'rate(12 hours)',
      throttleRateLimit: 120,
      throttleBurstLimit: 240,
    },
  },
  'Logbook',
);
const apiOnly = synth({ settings: { viewer: false } });
const apiOnlyWithOrigin = synth({ settings: { viewer: false, viewerOrigin: 'https://audit.example.com' } });
/** Every option and 1,000 generated routes spread over the route groups, each served by a handler of its group. */
const methods = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];
const groupNames = [...routeGroups().keys()];
const grown = synth({
  settings: everyOption,
  extraRoutes: Object.fromEntries(
    Array.from({ length: 1000 }, (_, i) => [
      `${methods[i % methods.length]} /api/v1/generated/${Math.floor(i / methods.length)}/{id}`,
      groupNames[i % groupNames.length]!,
    ]),
  ),
});
const refOf = (prefix: string) => Object.keys(deployed.resources).find((id) => id.startsWith(prefix))!;
/** The one resource of a type (whose logical id starts with `prefix`). */
const idOf = (type: string, prefix = '') => {
  const found = deployed.ofType(type).filter(([id]) => id.startsWith(prefix));
  expect(found).toHaveLength(1);
  return found[0]![0];
};
const apiFunctions = deployed
  .ofType('AWS::Lambda::Function')
  .filter(([, r]) => /^Logbook [\w-]+:/.test(r.Properties.Description));
/** This project's functions (not CDK's own: log retention, bucket deployment). */
const logbookFunctions = deployed
  .ofType('AWS::Lambda::Function')
  .filter(([, r]) => String(r.Properties.Description).startsWith('Logbook'));

/** The functions of the stack as deployed that may send messages to the queue of this logical id. */
const sendersTo = (queueId: string) =>
  deployed
    .ofType('AWS::Lambda::Function')
    .filter(([id]) =>
      deployed
        .statementsOf(id)
        .some(
          (s) =>
            [s.Action].flat().includes('sqs:SendMessage') &&
            JSON.stringify(s.Resource) === JSON.stringify({ 'Fn::GetAtt': [queueId, 'Arn'] }),
        ),
    );

describe('the CDK stack', () => {
  it("synthesizes with cdk-nag's AwsSolutions checks and the Control Tower rules and no unacknowledged finding, each acknowledgment with its reason", () => {
    // Each synthesis ran the checks: a finding would have thrown.
    for (const { stack } of [deployed, withEveryOption, configured]) {
      const acknowledged = stack.node
        .findAll()
        .flatMap((c) =>
          c.node.metadata
            .filter((m) => m.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY)
            .flatMap((m) => Object.values(m.data as Record<string, string>)),
        );
      expect(acknowledged.length).toBeGreaterThan(0);
      for (const reason of acknowledged) expect(reason.length).toBeGreaterThan(30);
    }
    // The Control Tower rules the stack does not follow are listed in one place, each with its reason.
    for (const reason of Object.values(guardExceptions)) expect(reason.length).toBeGreaterThan(30);
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
    deployed.template.hasResourceProperties('AWS::RDS::DBInstance', {
      DBInstanceClass: 'db.serverless',
      PubliclyAccessible: false,
    });
  });

  it('lets a test stage switch deletion protection and the final snapshot off, and set the capacity', () => {
    configured.template.hasResource('AWS::RDS::DBCluster', {
      DeletionPolicy: 'Delete',
      Properties: Match.objectLike({
        DeletionProtection: false,
        ServerlessV2ScalingConfiguration: Match.objectLike({ MinCapacity: 0, MaxCapacity: 2 }),
      }),
    });
  });

  it('keeps the database in isolated subnets of a VPC without NAT gateway or internet gateway, open to no one', () => {
    deployed.template.resourceCountIs('AWS::EC2::NatGateway', 0);
    deployed.template.resourceCountIs('AWS::EC2::InternetGateway', 0);
    for (const [, subnet] of deployed.ofType('AWS::EC2::Subnet'))
      expect(subnet.Properties.MapPublicIpOnLaunch).toBe(false);
    deployed.template.hasResourceProperties('AWS::EC2::SecurityGroup', { SecurityGroupIngress: Match.absent() });
    deployed.template.resourceCountIs('AWS::EC2::SecurityGroupIngress', 0);
    for (const [, fn] of deployed.ofType('AWS::Lambda::Function')) expect(fn.Properties.VpcConfig).toBeUndefined();
  });

  it("keeps one secret per database role (the owner's managed by RDS; logbook_app; logbook_audit_admin), one for the anchor signing key and one for the enrollment-key seal", () => {
    const logins = deployed
      .ofType('AWS::SecretsManager::Secret')
      .filter(([, s]) => s.Properties.GenerateSecretString?.SecretStringTemplate)
      .map(([, s]) => JSON.parse(s.Properties.GenerateSecretString.SecretStringTemplate).username);
    expect(logins.sort()).toEqual(['logbook_app', 'logbook_audit_admin']);
    expect(
      deployed
        .ofType('AWS::SecretsManager::Secret')
        .map(([id]) => id)
        .filter((id) => id.startsWith('AnchorKeyPrivateKey')),
    ).toHaveLength(1);
    expect(deployed.ofType('AWS::SecretsManager::Secret')).toHaveLength(4);
    for (const [, s] of deployed.ofType('AWS::SecretsManager::Secret')) expect(s.Properties.KmsKeyId).toBeUndefined();
  });

  it("lets RDS manage and rotate the administrator's password, and the migration authenticate with RDS's secret", () => {
    const [clusterId, cluster] = deployed.ofType('AWS::RDS::DBCluster')[0]!;
    expect(cluster.Properties).toMatchObject({ MasterUsername: 'logbook_admin', ManageMasterUserPassword: true });
    expect(cluster.Properties.MasterUserPassword).toBeUndefined();
    const ownerSecret = { 'Fn::GetAtt': [clusterId, 'MasterUserSecret.SecretArn'] };
    const migrate = deployed.functionId('applies the SQL migrations');
    expect(deployed.resources[migrate]!.Properties.Environment.Variables.OWNER_DB_SECRET_ARN).toEqual(ownerSecret);
    const reads = deployed
      .statementsOf(migrate)
      .filter((s) => [s.Action].flat().includes('secretsmanager:GetSecretValue'))
      .map((s) => s.Resource);
    expect(reads).toEqual(expect.arrayContaining([ownerSecret, { Ref: refOf('DatabaseAppSecret') }]));
    expect(reads).toHaveLength(2);
    deployed.template.resourceCountIs('AWS::SecretsManager::RotationSchedule', 0);
  });

  it('grants the Data API on this cluster only and each secret by its ARN, never a wildcard (no grantDataApiAccess)', () => {
    const cluster = refOf('DatabaseCluster5');
    for (const [id] of deployed.ofType('AWS::Lambda::Function').filter(([id]) => !id.startsWith('LogRetention'))) {
      for (const statement of deployed.statementsOf(id)) {
        const actions = [statement.Action].flat();
        if (actions.some((a) => a.startsWith('rds-data:')))
          expect(JSON.stringify(statement.Resource)).toContain(`"Ref":"${cluster}"`);
        if (actions.some((a) => a.startsWith('rds-data:') || a.startsWith('secretsmanager:'))) {
          expect(statement.Resource).not.toBe('*');
          expect(JSON.stringify(statement.Resource)).not.toContain('*');
        }
      }
    }
  });

  it('lets the API functions read the app secret only, the retention worker the audit-admin secret and the anchor key only, and the migration the owner and app secrets', () => {
    const secretsReadBy = (fnId: string) =>
      deployed
        .statementsOf(fnId)
        .filter((s) => [s.Action].flat().includes('secretsmanager:GetSecretValue'))
        .map((s) => (s.Resource as { Ref: string }).Ref)
        .sort();
    const appSecret = refOf('DatabaseAppSecret');
    expect(secretsReadBy(deployed.functionId('retention worker'))).toEqual(
      [refOf('AnchorKeyPrivateKey'), refOf('DatabaseAuditAdminSecret')].sort(),
    );
    expect(apiFunctions.length).toBe(21);
    // The seal key: enrollment keys (hierarchy), secret script defaults (scripts), PSA secrets (alerts), channel
    // secrets (notifications), audit stream secrets (audit-streams), secret script parameters and webhook secrets
    // (automations).
    const sealers = ['hierarchy', 'scripts', 'alerts', 'notifications', 'audit-streams', 'automations'].map((group) =>
      deployed.functionId(`Logbook ${group}:`),
    );
    for (const [id] of apiFunctions)
      expect(secretsReadBy(id)).toEqual(
        sealers.includes(id) ? [appSecret, refOf('EnrollmentKeySealKey')].sort() : [appSecret],
      );
    expect(secretsReadBy(deployed.functionId('signs the audit anchors'))).toEqual([]);
  });

  /** Every IAM statement of the template that could let its principal read `secret`'s value (any secretsmanager read action, on it or on a wildcard). */
  const readersOf = (secret: string) =>
    deployed.ofType('AWS::IAM::Policy').flatMap(([policyId, policy]) =>
      (policy.Properties.PolicyDocument.Statement as { Effect: string; Action: string | string[]; Resource: unknown }[])
        .filter((statement) => statement.Effect === 'Allow')
        .filter((statement) =>
          [statement.Action]
            .flat()
            .some((action) => /^(secretsmanager:(GetSecretValue|Get\*|\*|BatchGetSecretValue)|\*)$/.test(action)),
        )
        .filter((statement) =>
          [statement.Resource]
            .flat()
            .some((resource) => resource === '*' || JSON.stringify(resource).includes(`"Ref":"${secret}"`)),
        )
        .flatMap(() => (policy.Properties.Roles as { Ref: string }[]).map((role) => `${role.Ref} (${policyId})`)),
    );
  const roleOf = (fnId: string) => deployed.resources[fnId]!.Properties.Role['Fn::GetAtt'][0] as string;

  it("lets no role but the retention function's read the audit-admin secret, nor the anchor signing key", () => {
    for (const secret of [refOf('DatabaseAuditAdminSecret'), refOf('AnchorKeyPrivateKey')]) {
      const readers = readersOf(secret);
      expect(readers).toHaveLength(1);
      expect(readers[0]).toMatch(new RegExp(`^${roleOf(deployed.functionId('retention worker'))} `));
    }
    // No resource policy on a secret widens that.
    deployed.template.resourceCountIs('AWS::SecretsManager::ResourcePolicy', 0);
  });

  it('generates the enrollment-key seal at deploy, readable by the functions that seal or open with it alone, which load it at cold start', () => {
    const seal = refOf('EnrollmentKeySealKey');
    // 43 letters and digits: base64 for 32 bytes, what shared/auth/key-seal.ts takes.
    expect(deployed.resources[seal]!.Properties.GenerateSecretString).toEqual({
      PasswordLength: 43,
      ExcludePunctuation: true,
      IncludeSpace: false,
    });
    // Enrollment keys (hierarchy), secret script defaults (scripts), PSA secrets (alerts, and the worker that signs),
    // notification channel secrets (notifications), audit stream secrets (audit-streams), secret script parameters and
    // webhook secrets (automations).
    const sealers = ['hierarchy', 'scripts', 'alerts', 'notifications', 'audit-streams', 'automations'].map((group) =>
      deployed.functionId(`Logbook ${group}:`),
    );
    const worker = deployed.functionId('Logbook: the work queue worker');
    const readers = readersOf(seal);
    expect(readers).toHaveLength(sealers.length + 1);
    for (const fnId of [...sealers, worker])
      expect(readers.some((reader) => reader.startsWith(`${roleOf(fnId)} `))).toBe(true);
    // Its ARN in those functions' configuration only (the value never is, in any function's).
    for (const [id, fn] of deployed.ofType('AWS::Lambda::Function')) {
      const variables = fn.Properties.Environment?.Variables ?? {};
      expect(variables.ENROLLMENT_KEY_SEAL_KEY).toBeUndefined();
      expect(variables.ENROLLMENT_KEY_SEAL_KEY_ARN).toEqual(
        [...sealers, worker].includes(id) ? { Ref: seal } : undefined,
      );
    }
  });

  it('lets the work queue worker and the channel test route send e-mail from the verified sender alone, and no other function', () => {
    const sends = (stack: typeof deployed, fnId: string) =>
      stack.statementsOf(fnId).filter((s) => [s.Action].flat().includes('ses:SendEmail'));
    const senders = [
      withEveryOption.functionId('Logbook notifications:'),
      withEveryOption.functionId('Logbook: the work queue worker'),
    ];
    for (const [id, fn] of withEveryOption.ofType('AWS::Lambda::Function')) {
      const statements = sends(withEveryOption, id);
      if (!senders.includes(id)) {
        expect(statements).toEqual([]);
        continue;
      }
      expect(statements).toMatchObject([
        { Condition: { StringEquals: { 'ses:FromAddress': 'alerts@msp.example.com' } } },
      ]);
      expect(fn.Properties.Environment.Variables.NOTIFICATION_EMAIL_FROM).toBe('alerts@msp.example.com');
    }
    // Without a sender, nothing may send.
    for (const [id] of deployed.ofType('AWS::Lambda::Function')) expect(sends(deployed, id)).toEqual([]);
  });

  it('lets the work queue worker put audit stream objects into the buckets auditStreamBuckets names, and no function any other', () => {
    const puts = (stack: typeof deployed, fnId: string) =>
      stack.statementsOf(fnId).filter((s) => [s.Action].flat().includes('s3:PutObject'));
    const worker = withEveryOption.functionId('Logbook: the work queue worker');
    expect(puts(withEveryOption, worker)).toMatchObject([
      {
        Resource: [
          { 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':s3:::acme-audit-archive/*']] },
          { 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':s3:::acme-siem-drop/*']] },
        ],
      },
    ]);
    for (const id of [worker, withEveryOption.functionId('Logbook audit-streams:')])
      expect(withEveryOption.resources[id]!.Properties.Environment.Variables.AUDIT_STREAM_BUCKETS).toBe(
        'acme-audit-archive,acme-siem-drop',
      );
    // Without the setting, no function may put an object into any bucket but the stack's own.
    expect(puts(deployed, deployed.functionId('Logbook: the work queue worker'))).toEqual([]);
    expect(() => synth({ settings: { auditStreamBuckets: 'Bad_Bucket' } })).toThrow(/auditStreamBuckets/);
  });

  it('lets the migration write the audit-admin login and the generator write the anchor key, without reading either back', () => {
    const writes = (fnId: string) =>
      deployed
        .statementsOf(fnId)
        .filter((s) => [s.Action].flat().includes('secretsmanager:PutSecretValue'))
        .map((s) => ({ actions: [s.Action].flat(), resource: (s.Resource as { Ref: string }).Ref }));
    expect(writes(deployed.functionId('applies the SQL migrations'))).toEqual([
      { actions: ['secretsmanager:PutSecretValue'], resource: refOf('DatabaseAuditAdminSecret') },
    ]);
    expect(writes(deployed.functionId('signs the audit anchors'))).toEqual([
      { actions: ['secretsmanager:PutSecretValue'], resource: refOf('AnchorKeyPrivateKey') },
    ]);
    for (const [id] of deployed
      .ofType('AWS::Lambda::Function')
      .filter(([id]) => !/^(DatabaseMigrate|AnchorKeyGenerator)/.test(id)))
      expect(writes(id)).toEqual([]);
  });

  it('generates the anchor key pair once, and again when anchorKeyGeneration changes; the audit function publishes its public key', () => {
    deployed.template.hasResourceProperties('Custom::LogbookAnchorKey', {
      ServiceToken: { 'Fn::GetAtt': [deployed.functionId('signs the audit anchors'), 'Arn'] },
      generation: '1',
      secretArn: { Ref: refOf('AnchorKeyPrivateKey') },
    });
    configured.template.hasResourceProperties('Custom::LogbookAnchorKey', {
      generation: '2',
    });
    const keyResource = refOf('AnchorKeyPair');
    expect(
      deployed.resources[deployed.functionId('Logbook audit')]!.Properties.Environment.Variables
        .AUDIT_ANCHOR_PUBLIC_KEY,
    ).toEqual({ 'Fn::GetAtt': [keyResource, 'publicKey'] });
    const retention = deployed.resources[deployed.functionId('retention worker')]!;
    expect(retention.Properties.Environment.Variables.AUDIT_ANCHOR_PRIVATE_KEY_ARN).toEqual({
      Ref: refOf('AnchorKeyPrivateKey'),
    });
    expect((retention as { DependsOn?: string[] }).DependsOn).toContain(keyResource);
    expect(() => new LogbookStack(new App({ context: { anchorKeyGeneration: '0' } }), 'Bad')).toThrow(
      /anchorKeyGeneration/,
    );
  });

  it('runs the migration custom resource on every deploy, as the owner, after the cluster exists', () => {
    deployed.template.hasResource('Custom::LogbookSchema', {
      Properties: {
        ServiceToken: { 'Fn::GetAtt': [deployed.functionId('applies the SQL migrations'), 'Arn'] },
        deployedAt: Match.anyValue(),
      },
      DependsOn: Match.arrayWith([Match.stringLikeRegexp('^DatabaseCluster')]),
    });
    // A property that differs on every synthesis: CloudFormation sends the resource an Update on every deploy.
    const deployedAt = (s: ReturnType<typeof synth>) =>
      s.ofType('Custom::LogbookSchema')[0]![1].Properties.deployedAt as string;
    expect(deployedAt(configured)).not.toBe(deployedAt(deployed));
    const migrate = deployed.resources[deployed.functionId('applies the SQL migrations')]!;
    expect(Object.keys(migrate.Properties.Environment.Variables)).toEqual(
      expect.arrayContaining([
        'DB_CLUSTER_ARN',
        'DB_NAME',
        'OWNER_DB_SECRET_ARN',
        'APP_DB_SECRET_ARN',
        'AUDIT_ADMIN_DB_SECRET_ARN',
      ]),
    );
    // Every function serving the API, and the retention worker, waits for the schema and the logins.
    for (const [id] of [...apiFunctions, [deployed.functionId('retention worker')]])
      expect((deployed.resources[id!] as { DependsOn?: string[] }).DependsOn).toContain(refOf('DatabaseSchema'));
  });

  it("lets a custom resource whose function cannot answer fail the deploy within minutes, not CloudFormation's hour", () => {
    deployed.template.hasResourceProperties('Custom::LogbookSchema', { ServiceTimeout: '600' });
    deployed.template.hasResourceProperties('Custom::LogbookAnchorKey', { ServiceTimeout: '300' });
    // Each answers before its own timeout (functions/migrate/custom-resource.ts), well inside the service timeout.
    expect(deployed.resources[deployed.functionId('applies the SQL migrations')]!.Properties.Timeout).toBeLessThan(600);
    expect(deployed.resources[deployed.functionId('generates the Ed25519 key')]!.Properties.Timeout).toBeLessThan(300);
  });

  /** The route keys the HTTP API's imported document declares, each with the integration it names. */
  const importedRoutes = (s: ReturnType<typeof synth>) => {
    const body = s.httpApi()[1].Properties.Body;
    const integrations = body.components['x-amazon-apigateway-integrations'];
    return Object.entries(body.paths as Record<string, Record<string, any>>).flatMap(([path, operations]) =>
      Object.entries(operations).map(([method, operation]) => {
        const name = /^#\/components\/x-amazon-apigateway-integrations\/(.+)$/.exec(
          operation['x-amazon-apigateway-integration'].$ref,
        )![1]!;
        const key =
          method === 'x-amazon-apigateway-any-method' && path === '/$default' && operation.isDefaultRoute === true
            ? '$default'
            : `${method.toUpperCase()} ${path}`;
        return { key, integration: integrations[name] };
      }),
    );
  };
  /** The function an integration of the document invokes. */
  const functionOfIntegration = (integration: { uri: unknown }) =>
    /"Fn::GetAtt":\["([^"]+)","Arn"\]/.exec(JSON.stringify(integration.uri))![1]!;

  it('serves every route of functions/routes.ts, and no other, from the route table, and $default for the rest', () => {
    expect(
      importedRoutes(deployed)
        .map((route) => route.key)
        .sort(),
    ).toEqual([...Object.keys(routes), '$default'].sort());
    // Routes are the document's alone: API Gateway drops route resources beside a Body on the next import.
    const httpApi = deployed.httpApi()[0];
    expect(deployed.ofType('AWS::ApiGatewayV2::Route').filter(([, r]) => r.Properties.ApiId.Ref === httpApi)).toEqual(
      [],
    );
    expect(
      deployed.ofType('AWS::ApiGatewayV2::Integration').filter(([, r]) => r.Properties.ApiId.Ref === httpApi),
    ).toEqual([]);
    expect(deployed.httpApi()[1].Properties.FailOnWarnings).toBe(true);
  });

  it('integrates each route with the Lambda of its group (payload format 2.0), one integration and one invoke permission per function', () => {
    const httpApi = deployed.httpApi()[0];
    const imported = importedRoutes(deployed);
    for (const { key, integration } of imported) {
      expect(integration).toMatchObject({ type: 'aws_proxy', httpMethod: 'POST', payloadFormatVersion: '2.0' });
      const group = [...routeGroups()].find(([, { targets }]) => key in targets)![0];
      expect(deployed.resources[functionOfIntegration(integration)]!.Properties.Description).toMatch(
        new RegExp(`^Logbook ${group}:`),
      );
    }
    const invoked = new Set(imported.map(({ integration }) => functionOfIntegration(integration)));
    expect(invoked.size).toBe(routeGroups().size);
    const permissions = deployed
      .ofType('AWS::Lambda::Permission')
      .filter(([, p]) => JSON.stringify(p.Properties.SourceArn ?? '').includes(`{"Ref":"${httpApi}"}`));
    expect(permissions.map(([, p]) => p.Properties.FunctionName['Fn::GetAtt'][0]).sort()).toEqual([...invoked].sort());
    for (const [, permission] of permissions) {
      expect(permission.Properties.Principal).toBe('apigateway.amazonaws.com');
      expect(JSON.stringify(permission.Properties.SourceArn)).toMatch(/\{"Ref":"[^"]+"\},"\/\*\/\*"\]/);
    }
  });

  it("answers unmatched requests with the service's 404 or 405 ($default route to the system Lambda), not API Gateway's own", () => {
    const fallback = importedRoutes(deployed).find((route) => route.key === '$default')!;
    expect(deployed.resources[functionOfIntegration(fallback.integration)]!.Properties.Description).toMatch(
      /^Logbook system: .*\$default/,
    );
  });

  it("holds at most 300 resources with today's routes, and under 450 in every stack with 1,000 more routes", () => {
    const resourcesOf = (stack: Stack) => Object.keys(Template.fromStack(stack).toJSON().Resources).length;
    expect(resourcesOf(deployed.stack)).toBeLessThanOrEqual(300);
    expect(resourcesOf(withEveryOption.stack)).toBeLessThanOrEqual(300);
    expect(importedRoutes(grown)).toHaveLength(Object.keys(routes).length + 1000 + 1);
    // Every stack of the app, nested stacks included.
    const stacks = grown.stack.node.findAll().filter((c): c is Stack => Stack.isStack(c));
    expect(stacks.length).toBeGreaterThan(0);
    for (const stack of stacks) expect(resourcesOf(stack)).toBeLessThan(450);
    // CloudFormation takes a template of 1 MB at most (from S3).
    expect(JSON.stringify(grown.template.toJSON()).length).toBeLessThan(1_000_000);
  });

  it('runs each route group in a Lambda of its own: Node.js 22 on arm64, with a log group that expires', () => {
    const groups = new Set(routeGroups().keys());
    expect(apiFunctions.map(([, fn]) => /^Logbook ([\w-]+):/.exec(fn.Properties.Description)?.[1]).sort()).toEqual(
      [...groups, 'ws'].sort(),
    );
    expect(logbookFunctions.length).toBe(26);
    for (const [, fn] of logbookFunctions) {
      expect(fn.Properties).toMatchObject({
        Runtime: 'nodejs22.x',
        Architectures: ['arm64'],
        Handler: 'index.handler',
      });
      expect(fn.Properties.LoggingConfig.LogGroup).toBeDefined();
    }
    for (const [, group] of deployed.ofType('AWS::Logs::LogGroup')) expect(group.Properties.RetentionInDays).toBe(30);
  });

  it('gives every function the Powertools layer of the installed version, its service name and metrics namespace, configurable', () => {
    const version = powertoolsVersion();
    const layerParameter = Object.entries(
      deployed.template.toJSON().Parameters as Record<string, { Type: string; Default: string }>,
    ).find(([, p]) => p.Default === powertoolsLayerParameter(version))!;
    expect(layerParameter[1].Type).toBe('AWS::SSM::Parameter::Value<String>');
    for (const name of powertoolsPackages)
      expect(JSON.parse(readFileSync(`node_modules/@aws-lambda-powertools/${name}/package.json`, 'utf8')).version).toBe(
        version,
      );
    for (const [, fn] of logbookFunctions) {
      expect(fn.Properties.Layers).toEqual([{ Ref: layerParameter[0] }]);
      expect(fn.Properties.Environment.Variables).toMatchObject({
        POWERTOOLS_SERVICE_NAME: 'logbook',
        POWERTOOLS_METRICS_NAMESPACE: 'Logbook',
      });
    }
    const audit = configured.resources[configured.functionId('Logbook audit')]!;
    expect(audit.Properties.Layers).toEqual([
      'arn:aws:lambda:eu-west-1:094274105915:layer:AWSLambdaPowertoolsTypeScriptV2:48',
    ]);
    expect(audit.Properties.Environment.Variables).toMatchObject({
      POWERTOOLS_SERVICE_NAME: 'rmm-logbook',
      POWERTOOLS_METRICS_NAMESPACE: 'Rmm/Logbook',
    });
  });

  it('configures the functions without a secret value in their environment', () => {
    for (const [, fn] of deployed.ofType('AWS::Lambda::Function')) {
      const variables = JSON.stringify(fn.Properties.Environment?.Variables ?? {});
      expect(variables).not.toMatch(
        /resolve:secretsmanager|PASSWORD|JWT_SECRET"|"AGENT_ENROLLMENT_SECRET"|"AUDIT_ANCHOR_PRIVATE_KEY"/,
      );
    }
    const hierarchy = configured.resources[configured.functionId('Logbook hierarchy')]!;
    expect(hierarchy.Properties.Environment.Variables).toMatchObject({
      JWT_JWKS_URL: 'https://idp.example.com/.well-known/jwks.json',
      JWT_ISSUER: 'https://idp.example.com/',
      JWT_AUDIENCE: 'rmm',
      JWT_CLAIM_ROLE: 'roles',
      JWT_CLAIM_ORG_IDS: 'extn.logbookOrgId',
      TRUST_PROXY_HEADERS: 'true',
      AGENT_ENROLLMENT_SECRET_ARN: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:logbook-enrollment-AbCdEf',
    });
    const reads = configured
      .statementsOf(configured.functionId('Logbook hierarchy'))
      .filter((s) => s.Resource === 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:logbook-enrollment-AbCdEf');
    expect(reads).toHaveLength(1);
    expect(
      configured.resources[configured.functionId('Logbook audit')]!.Properties.Environment.Variables
        .AGENT_ENROLLMENT_SECRET_ARN,
    ).toBeUndefined();
    // Claim names left unset stay Logbook's own: no variable.
    expect(hierarchy.Properties.Environment.Variables.JWT_CLAIM_SCOPE).toBeUndefined();
  });

  it("allows the deployed viewer's origin by CORS, and the extra origins of viewerOrigin; none without a viewer", () => {
    // CORS is the imported document's: API Gateway ignores the API's CorsConfiguration beside a Body.
    const corsOf = (s: ReturnType<typeof synth>) => s.httpApi()[1].Properties.Body['x-amazon-apigateway-cors'];
    const distribution = idOf('AWS::CloudFront::Distribution');
    const viewerOrigin = { 'Fn::Join': ['', ['https://', { 'Fn::GetAtt': [distribution, 'DomainName'] }]] };
    expect(corsOf(deployed)).toMatchObject({
      allowOrigins: [viewerOrigin],
      allowHeaders: expect.arrayContaining(['authorization']),
    });
    for (const s of [deployed, configured, apiOnly, apiOnlyWithOrigin])
      expect(s.httpApi()[1].Properties.CorsConfiguration).toBeUndefined();
    expect(corsOf(configured).allowOrigins).toEqual([
      viewerOrigin,
      'http://localhost:5173',
      'https://audit.example.com',
    ]);
    expect(corsOf(apiOnly)).toBeUndefined();
    expect(corsOf(apiOnlyWithOrigin).allowOrigins).toEqual(['https://audit.example.com']);
    expect(() => synth({ settings: { viewerOrigin: 'https://audit.example.com/viewer' } })).toThrow(/viewerOrigin/);
  });

  it('throttles and logs both API stages, sized from expectedDevices (1,000 by default), with alarms near the throttles', () => {
    // 50 + 3 × (1 heartbeat + 1 other request) a device a minute: 50 + devices / 10 a second, burst twice that.
    const stagesOf = (stack: typeof deployed) => stack.ofType('AWS::ApiGatewayV2::Stage');
    const alarmOf = (stack: typeof deployed, name: string) =>
      stack.ofType('AWS::CloudWatch::Alarm').find(([id]) => id.includes(name))![1].Properties;
    for (const [stack, rate] of [
      [deployed, 150],
      [withEveryOption, 1_050],
    ] as const) {
      const stages = stagesOf(stack);
      expect(stages).toHaveLength(2);
      for (const [, stage] of stages)
        expect(stage.Properties).toMatchObject({
          AutoDeploy: true,
          DefaultRouteSettings: { ThrottlingRateLimit: rate, ThrottlingBurstLimit: 2 * rate },
          AccessLogSettings: { DestinationArn: expect.anything() },
        });
      // A heartbeat a device a minute fits each stage alone, with room to spare.
      expect(rate).toBeGreaterThan((rate === 150 ? 1_000 : 10_000) / 60);
      expect(alarmOf(stack, 'HttpApiNearThrottle')).toMatchObject({
        MetricName: 'Count',
        Namespace: 'AWS/ApiGateway',
        Threshold: 0.8 * rate * 300,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      });
      expect(alarmOf(stack, 'WebSocketNearThrottle').Threshold).toBe(0.8 * rate * 300);
    }
    // Explicit throttles win over the sizing.
    for (const [, stage] of stagesOf(configured))
      expect(stage.Properties.DefaultRouteSettings).toEqual({ ThrottlingRateLimit: 120, ThrottlingBurstLimit: 240 });
    expect(() => synth({ settings: { expectedDevices: 0 } })).toThrow(/expectedDevices/);
  });

  it("logs JSON with the platform lines from WARN up, and traces every function but the agents' (agentTracing)", () => {
    const agentGroups = agentRouteGroups();
    expect([...agentGroups].sort()).toEqual(expect.arrayContaining(['agents', 'ws']));
    const groupOf = (description: string) => /^Logbook ([\w-]+):/.exec(description)?.[1];
    for (const [stack, agentMode] of [
      [deployed, 'PassThrough'],
      [withEveryOption, 'Active'],
    ] as const)
      for (const [, fn] of stack
        .ofType('AWS::Lambda::Function')
        .filter(([, f]) => String(f.Properties.Description).startsWith('Logbook'))) {
        const agent = agentGroups.has(groupOf(fn.Properties.Description) ?? '');
        expect(fn.Properties.TracingConfig, fn.Properties.Description).toEqual({ Mode: agent ? agentMode : 'Active' });
        expect(fn.Properties.LoggingConfig).toMatchObject({
          LogFormat: 'JSON',
          SystemLogLevel: 'WARN',
          ApplicationLogLevel: agent ? 'WARN' : 'INFO',
        });
      }
  });

  it("opens the agents' WebSocket API with $connect, $disconnect and $default on its stage, and lets only the relays post to its connections", () => {
    const wsApi = deployed
      .ofType('AWS::ApiGatewayV2::Api')
      .find(([, a]) => a.Properties.ProtocolType === 'WEBSOCKET')![0];
    const keys = deployed
      .ofType('AWS::ApiGatewayV2::Route')
      .filter(([, r]) => r.Properties.ApiId.Ref === wsApi)
      .map(([, r]) => r.Properties.RouteKey);
    expect(keys.sort()).toEqual([...Object.keys(wsRoutes), 'ping'].sort());
    deployed.template.hasResourceProperties('AWS::ApiGatewayV2::Stage', { ApiId: { Ref: wsApi }, StageName: 'live' });
    const relays = deployed
      .ofType('AWS::Lambda::Function')
      .filter(([id]) =>
        deployed.statementsOf(id).some((s) => [s.Action].flat().includes('execute-api:ManageConnections')),
      );
    expect(
      relays
        .map(([, fn]) => /^Logbook ([\w-]+):/.exec(fn.Properties.Description)?.[1] ?? fn.Properties.Description)
        .sort(),
    ).toEqual(
      [
        deployed.resources[deployed.functionId('work queue worker')]!.Properties.Description,
        'automations',
        'live-query',
        'scripts',
        'ws',
      ].sort(),
    );
    for (const [id] of relays) {
      const grant = deployed.statementsOf(id).find((s) => [s.Action].flat().includes('execute-api:ManageConnections'))!;
      expect(JSON.stringify(grant.Resource)).toContain(`{"Ref":"${wsApi}"},"/live/*/@connections/*"`);
      expect(deployed.resources[id]!.Properties.Environment.Variables.WS_MANAGEMENT_ENDPOINT).toBeDefined();
    }
  });

  it("takes the agents' keep-alive in API Gateway: a message of type ping goes to a MOCK integration, no Lambda, no reply", () => {
    const wsApi = deployed.ofType('AWS::ApiGatewayV2::Api').find(([, a]) => a.Properties.ProtocolType === 'WEBSOCKET')!;
    expect(wsApi[1].Properties.RouteSelectionExpression).toBe('$request.body.type');
    const ping = deployed
      .ofType('AWS::ApiGatewayV2::Route')
      .find(([, r]) => r.Properties.ApiId.Ref === wsApi[0] && r.Properties.RouteKey === 'ping')!;
    expect(ping[1].Properties.RouteResponseSelectionExpression).toBeUndefined();
    const integrationId = (ping[1].Properties.Target['Fn::Join'] as [string, unknown[]])[1][1] as { Ref: string };
    expect(deployed.resources[integrationId.Ref]!.Properties).toMatchObject({
      IntegrationType: 'MOCK',
      RequestTemplates: { 'application/json': '{"statusCode":200}' },
    });
    expect(
      deployed.ofType('AWS::ApiGatewayV2::RouteResponse').filter(([, r]) => r.Properties.ApiId.Ref === wsApi[0]),
    ).toEqual([]);
  });

  it('queues script deliveries, PSA events and spooled audit rows on an encrypted SQS queue with a dead-letter queue, polled by the worker', () => {
    // The work queue, its heartbeat queue and their dead-letter queue, beside the daily run's failure queue and its
    // integrity jobs' queue.
    const queues = deployed.ofType('AWS::SQS::Queue');
    expect(queues).toHaveLength(5);
    const queue = queues.find(([id]) => /^WorkQueue[0-9A-F]{8}$/.test(id))!;
    expect(queue[1].Properties).toMatchObject({ SqsManagedSseEnabled: true, RedrivePolicy: { maxReceiveCount: 5 } });
    deployed.template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: { Ref: deployed.functionId('work queue worker') },
      FunctionResponseTypes: ['ReportBatchItemFailures'],
    });
    const senders = sendersTo(queue[0]).map(
      ([, fn]) =>
        /^Logbook ([\w-]+):/.exec(fn.Properties.Description)?.[1] ??
        (fn.Properties.Description.includes('billing due run')
          ? 'billing run'
          : fn.Properties.Description.includes('retention worker')
            ? 'retention'
            : 'worker'),
    );
    // Every API function spools an audit row whose write failed to the queue, and so does the billing due run;
    // scripts and alerts also queue deliveries; the daily retention run arms the move of history rows left waiting.
    // The migration function does not send.
    const apiGroups = deployed
      .ofType('AWS::Lambda::Function')
      .flatMap(([, fn]) => /^Logbook ([\w-]+):/.exec(fn.Properties.Description)?.[1] ?? []);
    expect(apiGroups).toEqual(expect.arrayContaining(['alerts', 'scripts', 'ws', 'audit']));
    expect(senders.sort()).toEqual([...apiGroups, 'worker', 'billing run', 'retention'].sort());
  });

  it("queues the heartbeats of agents' connections for the worker's batches of up to 100, gathered for 5 seconds", () => {
    const [heartbeatsQueue, heartbeats] = deployed
      .ofType('AWS::SQS::Queue')
      .find(([id]) => id.startsWith('WorkQueueHeartbeats'))!;
    expect(heartbeats.Properties).toMatchObject({ SqsManagedSseEnabled: true, RedrivePolicy: { maxReceiveCount: 5 } });
    deployed.template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: { Ref: deployed.functionId('work queue worker') },
      EventSourceArn: { 'Fn::GetAtt': [heartbeatsQueue, 'Arn'] },
      BatchSize: 100,
      MaximumBatchingWindowInSeconds: 5,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
    });
    // Only the function of the agents' connections sends heartbeats.
    const senders = sendersTo(heartbeatsQueue);
    expect(senders.map(([, fn]) => /^Logbook ([\w-]+):/.exec(fn.Properties.Description)?.[1])).toEqual(['ws']);
    expect(senders[0]![1].Properties.Environment.Variables.HEARTBEAT_QUEUE_URL).toEqual({ Ref: heartbeatsQueue });
  });

  it("runs the integrity watch's jobs of older rows in the retention function, from a queue of its own", () => {
    const retention = deployed.functionId('retention worker');
    const [jobsQueue, jobs] = deployed.ofType('AWS::SQS::Queue').find(([id]) => id.startsWith('IntegrityJobs'))!;
    expect(jobs.Properties).toMatchObject({
      SqsManagedSseEnabled: true,
      RedrivePolicy: { deadLetterTargetArn: { 'Fn::GetAtt': [refOf('RetentionFailures'), 'Arn'] }, maxReceiveCount: 3 },
    });
    deployed.template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: { Ref: retention },
      EventSourceArn: { 'Fn::GetAtt': [jobsQueue, 'Arn'] },
      FunctionResponseTypes: ['ReportBatchItemFailures'],
    });
    const senders = sendersTo(jobsQueue).map(([id]) => id);
    expect(senders).toEqual([retention]);
    expect(deployed.resources[retention]!.Properties.Environment.Variables.INTEGRITY_QUEUE_URL).toEqual({
      Ref: jobsQueue,
    });
  });

  it('witnesses the anchors in a bucket with Object Lock in compliance mode, written by the retention worker alone', () => {
    deployed.template.hasResourceProperties('AWS::S3::Bucket', {
      ObjectLockEnabled: true,
      ObjectLockConfiguration: {
        ObjectLockEnabled: 'Enabled',
        Rule: { DefaultRetention: { Mode: 'COMPLIANCE', Days: 400 } },
      },
      VersioningConfiguration: { Status: 'Enabled' },
    });
    const bucket = deployed.ofType('AWS::S3::Bucket').find(([, b]) => b.Properties.ObjectLockEnabled)![0];
    const writers = deployed
      .ofType('AWS::IAM::Policy')
      .filter(([, policy]) =>
        (policy.Properties.PolicyDocument.Statement as { Action: string | string[]; Resource: unknown }[]).some(
          (statement) =>
            [statement.Action].flat().some((action) => /^s3:(PutObject|\*)/.test(action)) &&
            JSON.stringify(statement.Resource).includes(bucket),
        ),
      );
    expect(writers.map(([, policy]) => (policy.Properties.Roles as { Ref: string }[])[0]!.Ref)).toEqual([
      roleOf(deployed.functionId('retention worker')),
    ]);
    expect(
      deployed.resources[deployed.functionId('retention worker')]!.Properties.Environment.Variables.AUDIT_WITNESS,
    ).toBeDefined();
  });

  it('runs the retention worker daily from an EventBridge schedule, on a configurable schedule', () => {
    deployed.template.hasResourceProperties('AWS::Events::Rule', {
      ScheduleExpression: 'cron(15 3 * * ? *)',
      Targets: [Match.objectLike({ Arn: { 'Fn::GetAtt': [deployed.functionId('retention worker'), 'Arn'] } })],
    });
    configured.template.hasResourceProperties('AWS::Events::Rule', {
      ScheduleExpression: 'rate(12 hours)',
    });
  });

  it('runs the billing due run daily from an EventBridge schedule, as the API role', () => {
    const billingRun = deployed.functionId('billing due run');
    deployed.template.hasResourceProperties('AWS::Events::Rule', {
      ScheduleExpression: 'cron(5 0 * * ? *)',
      Targets: [Match.objectLike({ Arn: { 'Fn::GetAtt': [billingRun, 'Arn'] } })],
    });
    const secrets = deployed
      .statementsOf(billingRun)
      .filter((s) => [s.Action].flat().includes('secretsmanager:GetSecretValue'))
      .map((s) => (s.Resource as { Ref: string }).Ref);
    expect(secrets).toEqual([refOf('DatabaseAppSecret')]);
  });

  it('reads its settings from CDK context, and refuses values Aurora or CloudWatch would not take', () => {
    const app = new App({
      context: {
        'aws:cdk:bundling-stacks': [],
        maxCapacityAcu: '8',
        trustProxyHeaders: 'true',
        logRetentionDays: '90',
        jwtJwksUrl,
      },
    });
    const stack = new LogbookStack(app, 'Logbook');
    const template = Template.fromStack(stack);
    template.hasResourceProperties('AWS::RDS::DBCluster', {
      ServerlessV2ScalingConfiguration: Match.objectLike({ MaxCapacity: 8 }),
    });
    template.hasResourceProperties('AWS::Logs::LogGroup', { RetentionInDays: 90 });
    expect(() => new LogbookStack(new App({ context: { maxCapacityAcu: '0.25' } }), 'Bad')).toThrow(/maxCapacityAcu/);
    expect(() => new LogbookStack(new App({ context: { logRetentionDays: '45', jwtJwksUrl } }), 'Bad')).toThrow(
      /logRetentionDays/,
    );
    expect(() => new LogbookStack(new App({ context: { deletionProtection: 'no' } }), 'Bad')).toThrow(
      /deletionProtection/,
    );
  });
});

describe('the audit viewer on S3 and CloudFront', () => {
  const bucket = idOf('AWS::S3::Bucket', 'ViewerSite');
  const distribution = idOf('AWS::CloudFront::Distribution');
  const bucketArn = { 'Fn::GetAtt': [bucket, 'Arn'] };

  it('keeps the site in a private, encrypted bucket without website hosting, that refuses plain HTTP', () => {
    const site = deployed.resources[bucket]!.Properties;
    expect(site.PublicAccessBlockConfiguration).toEqual({
      BlockPublicAcls: true,
      BlockPublicPolicy: true,
      IgnorePublicAcls: true,
      RestrictPublicBuckets: true,
    });
    expect(site.BucketEncryption.ServerSideEncryptionConfiguration[0].ServerSideEncryptionByDefault.SSEAlgorithm).toBe(
      'AES256',
    );
    expect(site.WebsiteConfiguration).toBeUndefined();
    expect(site.OwnershipControls.Rules).toEqual([{ ObjectOwnership: 'BucketOwnerEnforced' }]);
    expect(site.LoggingConfiguration.DestinationBucketName).toEqual({ Ref: refOf('ViewerAccessLogs') });
    deployed.template.hasResourceProperties('AWS::S3::BucketPolicy', {
      Bucket: { Ref: bucket },
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Effect: 'Deny',
            Action: 's3:*',
            Principal: { AWS: '*' },
            Condition: { Bool: { 'aws:SecureTransport': 'false' } },
          }),
        ]),
      },
    });
  });

  it('lets only this distribution read the bucket, through Origin Access Control', () => {
    const policy = deployed.ofType('AWS::S3::BucketPolicy').find(([, p]) => p.Properties.Bucket.Ref === bucket)![1];
    const allows = (policy.Properties.PolicyDocument.Statement as Record<string, any>[]).filter(
      (statement) => statement.Effect === 'Allow',
    );
    expect(allows).toEqual([
      {
        Effect: 'Allow',
        Action: 's3:GetObject',
        Principal: { Service: 'cloudfront.amazonaws.com' },
        Resource: { 'Fn::Join': ['', [bucketArn, '/*']] },
        Condition: {
          StringEquals: {
            'AWS:SourceArn': {
              'Fn::Join': [
                '',
                [
                  'arn:',
                  { Ref: 'AWS::Partition' },
                  ':cloudfront::',
                  { Ref: 'AWS::AccountId' },
                  ':distribution/',
                  { Ref: distribution },
                ],
              ],
            },
          },
        },
      },
    ]);
    deployed.template.hasResourceProperties('AWS::CloudFront::OriginAccessControl', {
      OriginAccessControlConfig: {
        OriginAccessControlOriginType: 's3',
        SigningBehavior: 'always',
        SigningProtocol: 'sigv4',
      },
    });
    const config = deployed.resources[distribution]!.Properties.DistributionConfig;
    expect(config.Origins).toHaveLength(1);
    expect(config.Origins[0]).toMatchObject({
      DomainName: { 'Fn::GetAtt': [bucket, 'RegionalDomainName'] },
      OriginAccessControlId: { 'Fn::GetAtt': [idOf('AWS::CloudFront::OriginAccessControl'), 'Id'] },
      S3OriginConfig: { OriginAccessIdentity: '' },
    });
  });

  it('serves index.html over HTTPS only, read-only, with security headers, and logs its requests', () => {
    const config = deployed.resources[distribution]!.Properties.DistributionConfig;
    expect(config).toMatchObject({
      DefaultRootObject: 'index.html',
      Logging: { Bucket: { 'Fn::GetAtt': [refOf('ViewerAccessLogs'), 'RegionalDomainName'] } },
    });
    expect(config.DefaultCacheBehavior).toMatchObject({
      ViewerProtocolPolicy: 'redirect-to-https',
      AllowedMethods: ['GET', 'HEAD'],
      ResponseHeadersPolicyId: { Ref: refOf('ViewerSecurityHeaders') },
    });
    const headers =
      deployed.resources[refOf('ViewerSecurityHeaders')]!.Properties.ResponseHeadersPolicyConfig.SecurityHeadersConfig;
    expect(headers).toMatchObject({
      StrictTransportSecurity: { AccessControlMaxAgeSec: 31_536_000, IncludeSubdomains: true, Override: true },
      ContentTypeOptions: { Override: true },
      FrameOptions: { FrameOption: 'DENY', Override: true },
      ReferrerPolicy: { ReferrerPolicy: 'no-referrer', Override: true },
    });
    const csp = JSON.stringify(headers.ContentSecurityPolicy.ContentSecurityPolicy);
    for (const directive of [
      "default-src 'none'",
      "script-src 'self'",
      "frame-ancestors 'none'",
      "connect-src 'self' https://*.execute-api.",
    ])
      expect(csp).toContain(directive);
    const logs = deployed.resources[refOf('ViewerAccessLogs')]!.Properties;
    expect(logs.PublicAccessBlockConfiguration.RestrictPublicBuckets).toBe(true);
    expect(logs.LifecycleConfiguration.Rules).toEqual([{ ExpirationInDays: 30, Status: 'Enabled' }]);
  });

  it('deploys the built site and a config.json naming the HTTP API, the HTML pages and config.json revalidated', () => {
    const deployments = deployed.ofType('Custom::CDKBucketDeployment');
    expect(deployments).toHaveLength(2);
    for (const [, d] of deployments) expect(d.Properties.DestinationBucketName).toEqual({ Ref: bucket });
    const pages = deployments.find(([id]) => id.startsWith('ViewerPages'))![1].Properties;
    expect(pages).toMatchObject({
      Include: ['*.html', 'config.json'],
      Exclude: ['*'],
      SystemMetadata: { 'cache-control': 'no-cache' },
    });
    // config.json: {"apiBaseUrl": <the HTTP API's URL>}, filled in at deploy time.
    const markers = JSON.stringify(pages.SourceMarkers);
    const httpApi = deployed.httpApi()[0];
    expect(markers).toContain(`{"Ref":"${httpApi}"}`);
    const assets = deployments.find(([id]) => id.startsWith('ViewerAssets'))![1].Properties;
    expect(assets).toMatchObject({
      Exclude: ['*.html', 'config.json'],
      SystemMetadata: { 'cache-control': 'public, max-age=31536000, immutable' },
    });
    expect(assets.Prune).not.toBe(false);
  });

  it('is built offline from web/ with its buildWeb, as npm run synth builds it', { timeout: 60_000 }, () => {
    const dir = mkdtempSync(join(tmpdir(), 'logbook-viewer-'));
    try {
      buildViewerSite(dir);
      const html = readFileSync(join(dir, 'index.html'), 'utf8');
      const assets = [...html.matchAll(/(?:src|href)="(assets\/[^"]+)"/g)].map((match) => match[1]!);
      expect(assets.map((asset) => asset.replace(/-[A-Z0-9]+\./, '.')).sort()).toEqual([
        'assets/app.js',
        'assets/styles.css',
      ]);
      for (const asset of assets) expect(existsSync(join(dir, asset))).toBe(true);
      expect(existsSync(join(dir, 'config.json'))).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('is left out when the viewer setting is false', () => {
    apiOnly.template.resourceCountIs('AWS::CloudFront::Distribution', 0);
    // The one bucket left is the anchors' witness.
    apiOnly.template.resourceCountIs('AWS::S3::Bucket', 1);
    apiOnly.template.hasResourceProperties('AWS::S3::Bucket', { ObjectLockEnabled: true });
  });
});
