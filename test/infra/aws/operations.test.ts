/**
 * What an MSP running the stack in production relies on, read from the template: alarms and their topic,
 * the daily run's dead-letter path, least-privilege logs, reserved concurrency, deployable twice in one account,
 * refusing a stack that authenticates no one, TLS with custom domains, ordered viewer deployments, access-log format,
 * the optional backup plan and the runtime setting.
 */
import { App } from 'aws-cdk-lib';
import { describe, expect, it } from 'vitest';
import { LogbookStack } from '#infra/aws/logbook-stack.ts';
import { synth } from '#test/support/stack.ts';

const deployed = synth();
const { resources, ofType, functionId } = deployed;
const idOf = (prefix: string) => Object.keys(resources).find((id) => id.startsWith(prefix))!;
const alarms = () =>
  ofType('AWS::CloudWatch::Alarm').map(([id, alarm]) => ({ id, ...alarm.Properties }) as Record<string, any>);
const alarmNamed = (name: string) => alarms().find((alarm) => alarm.id.startsWith(`Alarms${name}`))!;

const domains = {
  apiDomainName: 'api.logbook.example.com',
  apiCertificateArn: 'arn:aws:acm:eu-west-1:123456789012:certificate/11111111-2222-3333-4444-555555555555',
  viewerDomainName: 'audit.logbook.example.com',
  viewerCertificateArn: 'arn:aws:acm:us-east-1:123456789012:certificate/11111111-2222-3333-4444-555555555555',
};
/** A stage in eu-west-1 that sets every optional setting these tests read: synthesized once, on first use. */
let tunedStack: ReturnType<typeof synth> | undefined;
const tuned = () =>
  (tunedStack ??= synth({
    env: { account: '123456789012', region: 'eu-west-1' },
    settings: {
      ...domains,
      alarmEmail: 'ops@example.com',
      backupPlan: true,
      liveQueryConcurrency: 20,
      agentChannelConcurrency: 0,
      lambdaRuntime: 'nodejs24.x',
    },
  }));

describe('alarms', () => {
  it('notify one SNS topic (TLS only), which e-mails alarmEmail when it is set', () => {
    const topic = idOf('AlarmsTopic');
    expect(resources[topic]!.Type).toBe('AWS::SNS::Topic');
    deployed.template.resourceCountIs('AWS::SNS::Subscription', 0);
    tuned().template.hasResourceProperties('AWS::SNS::Subscription', {
      Protocol: 'email',
      Endpoint: 'ops@example.com',
    });
    const policy = ofType('AWS::SNS::TopicPolicy')[0]![1];
    expect(JSON.stringify(policy.Properties.PolicyDocument)).toContain('"aws:SecureTransport":"false"');
    for (const alarm of alarms()) {
      expect(alarm.AlarmActions).toEqual([{ Ref: topic }]);
      expect(alarm.AlarmDescription).toMatch(/\. What to do: .{20,}/);
    }
  });

  it('watch every figure docs/operations.md lists, each at its threshold', () => {
    const names = alarms().map((alarm) => alarm.id.replace(/^Alarms/, '').replace(/[0-9A-F]{8}$/, ''));
    expect(names.sort()).toEqual(
      [
        'AuditChainBreaks',
        'AuditRetentionFailures',
        'AuditStreamLag',
        'RetentionErrors',
        'RetentionDidNotRun',
        'BillingRunErrors',
        'BillingDidNotRun',
        'RetentionFailuresQueued',
        'AuditWriteFailures',
        'AuditEventsFailedPermanently',
        'UnhandledErrors',
        'DatabaseUnavailable',
        'HttpApi5xxRate',
        'WebSocketApiErrorRate',
        'HttpApiNearThrottle',
        'WebSocketNearThrottle',
        'LambdaThrottles',
      ].sort(),
    );
    for (const name of [
      'AuditChainBreaks',
      'AuditRetentionFailures',
      'AuditWriteFailures',
      'AuditEventsFailedPermanently',
      'UnhandledErrors',
    ]) {
      expect(alarmNamed(name)).toMatchObject({
        MetricName: name,
        Namespace: 'Logbook',
        Dimensions: [{ Name: 'service', Value: 'logbook' }],
        Statistic: 'Sum',
        Threshold: 1,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        TreatMissingData: 'notBreaching',
      });
    }
    expect(alarmNamed('AuditStreamLag')).toMatchObject({
      MetricName: 'AuditStreamLagSeconds',
      Namespace: 'Logbook',
      Statistic: 'Maximum',
      Threshold: 900,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
    });
    expect(alarmNamed('RetentionErrors')).toMatchObject({
      MetricName: 'Errors',
      Namespace: 'AWS/Lambda',
      Dimensions: [{ Name: 'FunctionName', Value: { Ref: functionId('retention worker') } }],
      Threshold: 1,
    });
    expect(alarmNamed('LambdaThrottles')).toMatchObject({ MetricName: 'Throttles', Namespace: 'AWS/Lambda' });
    expect(alarmNamed('LambdaThrottles').Dimensions).toBeUndefined();
    for (const name of ['HttpApi5xxRate', 'WebSocketApiErrorRate'])
      expect(alarmNamed(name)).toMatchObject({ Threshold: 5, EvaluationPeriods: 2 });
    expect(JSON.stringify(alarmNamed('HttpApi5xxRate').Metrics)).toContain('"MetricName":"5xx"');
  });

  it('alarm when a daily run (retention, billing) has not run for 26 hours, missing data counting as not run', () => {
    for (const [name, fn] of [
      ['RetentionDidNotRun', 'retention worker'],
      ['BillingDidNotRun', 'billing due run'],
    ] as const)
      expect(alarmNamed(name)).toMatchObject({
        MetricName: 'Invocations',
        Dimensions: [{ Name: 'FunctionName', Value: { Ref: functionId(fn) } }],
        Period: 3600,
        EvaluationPeriods: 26,
        DatapointsToAlarm: 26,
        Threshold: 1,
        ComparisonOperator: 'LessThanThreshold',
        TreatMissingData: 'breaching',
      });
  });

  it('show on one dashboard', () => {
    const dashboard = ofType('AWS::CloudWatch::Dashboard');
    expect(dashboard).toHaveLength(1);
    const body = JSON.stringify(dashboard[0]![1].Properties.DashboardBody);
    for (const alarm of alarms()) expect(body).toContain(alarm.id);
  });
});

describe('the daily run', () => {
  const queue = idOf('RetentionFailures');

  it('sends an event whose attempts all failed to an encrypted SQS queue instead of dropping it', () => {
    expect(resources[queue]!.Properties).toMatchObject({
      SqsManagedSseEnabled: true,
      MessageRetentionPeriod: 1_209_600,
    });
    deployed.template.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
      FunctionName: { Ref: functionId('retention worker') },
      MaximumRetryAttempts: 2,
      MaximumEventAgeInSeconds: 21_600,
      DestinationConfig: { OnFailure: { Destination: { 'Fn::GetAtt': [queue, 'Arn'] } } },
    });
    const rule = ofType('AWS::Events::Rule')[0]![1];
    expect(rule.Properties.Targets[0]).toMatchObject({
      DeadLetterConfig: { Arn: { 'Fn::GetAtt': [queue, 'Arn'] } },
      RetryPolicy: { MaximumRetryAttempts: 2 },
    });
    const sends = deployed
      .statementsOf(functionId('retention worker'))
      .filter((s) => [s.Action].flat().includes('sqs:SendMessage'));
    // And the integrity watch's jobs of older rows, on its own queue; and the move of history rows left waiting in
    // the lane, on the work queue.
    const jobs = idOf('IntegrityJobs');
    const workQueue = ofType('AWS::SQS::Queue').find(([id]) => /^WorkQueue[0-9A-F]{8}$/.test(id))![0];
    expect(sends.map((s) => s.Resource).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)))).toEqual(
      [{ 'Fn::GetAtt': [jobs, 'Arn'] }, { 'Fn::GetAtt': [queue, 'Arn'] }, { 'Fn::GetAtt': [workQueue, 'Arn'] }].sort(
        (a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)),
      ),
    );
  });

  it('alarms as soon as a failed run waits in the queue', () => {
    expect(alarmNamed('RetentionFailuresQueued')).toMatchObject({
      MetricName: 'ApproximateNumberOfMessagesVisible',
      Namespace: 'AWS/SQS',
      Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [queue, 'QueueName'] } }],
      Threshold: 1,
    });
  });
});

describe('least privilege', () => {
  const logbookFunctions = ofType('AWS::Lambda::Function').filter(([, fn]) =>
    String(fn.Properties.Description).startsWith('Logbook'),
  );

  it("gives each function a role of its own that may write only to the function's own log group", () => {
    const roles = new Set<string>();
    for (const [id, fn] of logbookFunctions) {
      const role = fn.Properties.Role['Fn::GetAtt'][0] as string;
      roles.add(role);
      expect(resources[role]!.Properties.ManagedPolicyArns).toBeUndefined();
      const logGroup = fn.Properties.LoggingConfig.LogGroup.Ref as string;
      const logs = deployed.statementsOf(id).filter((s) => [s.Action].flat().some((a) => a.startsWith('logs:')));
      expect(logs).toHaveLength(1);
      expect([logs[0]!.Action].flat().sort()).toEqual(['logs:CreateLogStream', 'logs:PutLogEvents']);
      expect(logs[0]!.Resource).toEqual({ 'Fn::GetAtt': [logGroup, 'Arn'] });
    }
    expect(roles.size).toBe(logbookFunctions.length);
  });

  it('grants no Data API action the functions never call', () => {
    const actions = ofType('AWS::IAM::Policy').flatMap(([, policy]) =>
      (policy.Properties.PolicyDocument.Statement as { Action: string | string[] }[]).flatMap((s) => [s.Action].flat()),
    );
    expect(actions.filter((a) => a.startsWith('rds-data:')).sort()).toEqual(
      expect.arrayContaining(['rds-data:ExecuteStatement', 'rds-data:BeginTransaction']),
    );
    expect(actions).not.toContain('rds-data:BatchExecuteStatement');
  });
});

describe('concurrency', () => {
  it('reserves (and caps) the executions of the live-query and WebSocket functions, configurable, 0 for none', () => {
    const reserved = (s: ReturnType<typeof synth>, name: string) =>
      s.resources[s.functionId(`Logbook ${name}:`)]!.Properties.ReservedConcurrentExecutions;
    expect(reserved(deployed, 'live-query')).toBe(100);
    expect(reserved(deployed, 'ws')).toBe(50);
    for (const [, fn] of ofType('AWS::Lambda::Function').filter(
      ([, fn]) => !/^Logbook (live-query|ws):/.test(fn.Properties.Description),
    ))
      expect(fn.Properties.ReservedConcurrentExecutions).toBeUndefined();
    expect(reserved(tuned(), 'live-query')).toBe(20);
    expect(reserved(tuned(), 'ws')).toBeUndefined();
    expect(() => synth({ settings: { liveQueryConcurrency: -1 } })).toThrow(/liveQueryConcurrency/);
  });
});

describe('deploying', () => {
  it('refuses a stack without jwtJwksUrl, unless allowNoUserAuth says it is an agent-only stage', () => {
    expect(() => new LogbookStack(new App({ context: { 'aws:cdk:bundling-stacks': [] } }), 'NoAuth')).toThrow(
      /Set jwtJwksUrl .*allowNoUserAuth=true/,
    );
    const agentOnly = new App({ context: { 'aws:cdk:bundling-stacks': [], allowNoUserAuth: 'true' } });
    expect(() => new LogbookStack(agentOnly, 'AgentOnly')).not.toThrow();
  });

  it('synthesizes the same stack name in two regions of one account with distinct CloudFront names', {
    timeout: 60_000,
  }, () => {
    const names = [tuned(), synth({ env: { account: '123456789012', region: 'us-east-1' } })].map(
      ({ ofType: typed }) => {
        return {
          originAccess: typed('AWS::CloudFront::OriginAccessControl')[0]![1].Properties.OriginAccessControlConfig.Name,
          headers: typed('AWS::CloudFront::ResponseHeadersPolicy')[0]![1].Properties.ResponseHeadersPolicyConfig.Name,
        };
      },
    );
    expect(names[0]).toEqual({ originAccess: 'Logbook-eu-west-1-viewer', headers: 'Logbook-eu-west-1-viewer-headers' });
    expect(names[1]).toEqual({ originAccess: 'Logbook-us-east-1-viewer', headers: 'Logbook-us-east-1-viewer-headers' });
    // Environment-agnostic (npm run synth): the region is CloudFormation's, resolved when it deploys.
    const agnostic = ofType('AWS::CloudFront::OriginAccessControl')[0]![1].Properties.OriginAccessControlConfig.Name;
    expect(JSON.stringify(agnostic)).toContain('{"Ref":"AWS::Region"}');
  });

  it("deploys the viewer's pages only after its assets", () => {
    const pages = ofType('Custom::CDKBucketDeployment').find(([id]) => id.startsWith('ViewerPages'))!;
    const assets = idOf('ViewerAssets');
    expect((pages[1] as { DependsOn?: string[] }).DependsOn).toEqual(
      expect.arrayContaining([expect.stringMatching(new RegExp(`^${assets.slice(0, 12)}`))]),
    );
  });

  it('logs each API request as JSON with request id, route key, status, latency, integration error and source IP, never the query string', () => {
    const formats = ofType('AWS::ApiGatewayV2::Stage').map(
      ([, stage]) => JSON.parse(stage.Properties.AccessLogSettings.Format) as Record<string, unknown>,
    );
    expect(formats).toHaveLength(2);
    for (const format of formats) {
      expect(Object.keys(format)).toEqual(
        expect.arrayContaining(['requestId', 'routeKey', 'status', 'latencyMs', 'integrationError', 'sourceIp']),
      );
      expect(JSON.stringify(format)).not.toMatch(/querystring|requestOverride|\$context\.identity\.user\b/i);
    }
  });
});

describe('custom domains', () => {
  it('serves the HTTP API on apiDomainName with its certificate, TLS 1.2 minimum, and names that URL to the viewer', () => {
    tuned().template.hasResourceProperties('AWS::ApiGatewayV2::DomainName', {
      DomainName: 'api.logbook.example.com',
      DomainNameConfigurations: [
        { CertificateArn: domains.apiCertificateArn, EndpointType: 'REGIONAL', SecurityPolicy: 'TLS_1_2' },
      ],
    });
    expect(tuned().ofType('AWS::ApiGatewayV2::ApiMapping')).toHaveLength(1);
    // The viewer's config.json names this URL (Viewer.publish).
    expect(tuned().stack.restApi.url).toBe('https://api.logbook.example.com/');
    deployed.template.resourceCountIs('AWS::ApiGatewayV2::DomainName', 0);
  });

  it('serves the viewer on viewerDomainName with its us-east-1 certificate over SNI, TLS 1.2 minimum, and lets its origin through CORS', () => {
    const config = tuned().ofType('AWS::CloudFront::Distribution')[0]![1].Properties.DistributionConfig;
    expect(config.Aliases).toEqual(['audit.logbook.example.com']);
    expect(config.ViewerCertificate).toEqual({
      AcmCertificateArn: domains.viewerCertificateArn,
      MinimumProtocolVersion: 'TLSv1.2_2021',
      SslSupportMethod: 'sni-only',
    });
    const httpApi = tuned().httpApi()[1];
    expect(httpApi.Properties.Body['x-amazon-apigateway-cors'].allowOrigins).toEqual([
      'https://audit.logbook.example.com',
    ]);
    const headers = tuned().ofType('AWS::CloudFront::ResponseHeadersPolicy')[0]![1];
    expect(JSON.stringify(headers.Properties)).toContain('https://api.logbook.example.com');
  });

  it('refuses a domain without its certificate, and a viewer certificate outside us-east-1', () => {
    expect(() => synth({ settings: { apiDomainName: 'api.example.com' } })).toThrow(/apiCertificateArn/);
    expect(() =>
      synth({ settings: { viewerDomainName: 'a.example.com', viewerCertificateArn: domains.apiCertificateArn } }),
    ).toThrow(/us-east-1/);
  });
});

describe('optional settings', () => {
  it('backs the cluster up daily with AWS Backup, kept 35 days, when backupPlan is set', () => {
    deployed.template.resourceCountIs('AWS::Backup::BackupPlan', 0);
    const backedUp = tuned();
    const plan = backedUp.ofType('AWS::Backup::BackupPlan')[0]![1].Properties.BackupPlan;
    expect(plan.BackupPlanRule).toEqual([
      expect.objectContaining({ ScheduleExpression: 'cron(0 5 * * ? *)', Lifecycle: { DeleteAfterDays: 35 } }),
    ]);
    const selection = backedUp.ofType('AWS::Backup::BackupSelection')[0]![1].Properties.BackupSelection;
    expect(JSON.stringify(selection.Resources)).toContain(':cluster:');
  });

  it('runs every function on the runtime lambdaRuntime names (Node.js 22 by default)', () => {
    const runtimes = (s: ReturnType<typeof synth>) =>
      new Set(
        s
          .ofType('AWS::Lambda::Function')
          .filter(([, fn]) => String(fn.Properties.Description).startsWith('Logbook'))
          .map(([, fn]) => fn.Properties.Runtime),
      );
    expect(runtimes(deployed)).toEqual(new Set(['nodejs22.x']));
    expect(runtimes(tuned())).toEqual(new Set(['nodejs24.x']));
    expect(() => synth({ settings: { lambdaRuntime: 'python3.13' } })).toThrow(/lambdaRuntime/);
  });
});
