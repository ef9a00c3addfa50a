/**
 * The CDK app (cdk.json): `npm run synth` synthesizes it offline, without AWS credentials or Docker (esbuild bundles
 * the functions); `npx cdk deploy` deploys it into the account and region of the caller's credentials. Settings come
 * from CDK context (infra/aws/settings.ts, docs/operations.md). cdk-nag's AwsSolutions checks and the AWS Control Tower proactive rules (cfn-guard) run on every synth.
 */
import { App } from 'aws-cdk-lib';
import { LogbookStack } from './logbook-stack.ts';
import { addPolicyChecks } from './policy-checks.ts';

const app = new App();
new LogbookStack(app, app.node.tryGetContext('stackName') ?? 'Logbook', {
  description:
    'Logbook: logging, audit and hierarchy backend of the RMM (HTTP and WebSocket APIs, Lambda, Aurora Serverless v2)',
});
// Any cdk-nag finding not acknowledged beside its resource, or Control Tower rule not excepted (infra/aws/policy-checks.ts), fails the synth.
addPolicyChecks(app);
