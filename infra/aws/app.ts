/**
 * The CDK app (cdk.json): `npm run synth` synthesizes it offline, without AWS credentials or Docker (esbuild bundles
 * the functions); `npx cdk deploy` deploys it into the account and region of the caller's credentials. Settings come
 * from CDK context (infra/aws/settings.ts, README "Deploy"). cdk-nag's AwsSolutions checks run on every synth.
 */
import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { LogbookStack } from './logbook-stack.ts';

const app = new App();
new LogbookStack(app, app.node.tryGetContext('stackName') ?? 'Logbook', {
  description:
    'Logbook: logging, audit and hierarchy backend of the RMM (HTTP and WebSocket APIs, Lambda, Aurora Serverless v2)',
});
// Any finding not acknowledged beside its resource (with the reason) fails the synth.
Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
