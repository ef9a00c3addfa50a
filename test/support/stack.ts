/**
 * The CDK stack synthesized for template assertions (aws-cdk-lib/assertions), bundling skipped: `npm run synth` and
 * `npm run bench:lambda` bundle for real.
 */
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { LogbookStack, type LogbookStackProps } from '#infra/aws/logbook-stack.ts';
import { addPolicyChecks } from '#infra/aws/policy-checks.ts';

export type Resource = {
  Type: string;
  Properties: Record<string, any>;
  DeletionPolicy?: string;
  Metadata?: Record<string, unknown>;
};

/** The identity provider every stack of these tests names (a stack without one is refused). */
export const jwtJwksUrl = 'https://idp.example.com/.well-known/jwks.json';

/** One synthesis of the stack; with `policyChecks`, cdk-nag's and cfn-guard's as `npm run synth` runs them (a finding throws). */
export function synth(props: LogbookStackProps = {}, stackName = 'Logbook', options: { policyChecks?: boolean } = {}) {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new LogbookStack(app, stackName, { ...props, settings: { jwtJwksUrl, ...props.settings } });
  if (options.policyChecks) addPolicyChecks(app);
  const template = Template.fromStack(stack);
  const resources = template.toJSON().Resources as Record<string, Resource>;
  const ofType = (type: string) => Object.entries(resources).filter(([, r]) => r.Type === type);
  const functionId = (description: string) =>
    ofType('AWS::Lambda::Function').find(([, r]) => String(r.Properties.Description).includes(description))![0];
  /** The statements of the policies attached to a function's role. */
  const statementsOf = (fnId: string) => {
    const role = resources[fnId]!.Properties.Role['Fn::GetAtt'][0] as string;
    return ofType('AWS::IAM::Policy')
      .filter(([, p]) => p.Properties.Roles.some((r: { Ref: string }) => r.Ref === role))
      .flatMap(([, p]) => p.Properties.PolicyDocument.Statement as { Action: string | string[]; Resource: unknown }[]);
  };
  /** The HTTP API: the API Gateway API whose routes are imported from its OpenAPI `Body`. */
  const httpApi = () => ofType('AWS::ApiGatewayV2::Api').find(([, r]) => r.Properties.Body)!;
  return { stack, template, resources, ofType, functionId, statementsOf, httpApi };
}
