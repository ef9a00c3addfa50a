/**
 * The CDK stack synthesized for template assertions (aws-cdk-lib/assertions), bundling skipped: `npm run synth` and
 * `npm run bench:lambda` bundle for real.
 */
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { LogbookStack, type LogbookStackProps } from '#infra/aws/logbook-stack.ts';

export type Resource = {
  Type: string;
  Properties: Record<string, any>;
  DeletionPolicy?: string;
  Metadata?: Record<string, unknown>;
};

/** The identity provider every stack of these tests names (a stack without one is refused). */
export const jwtJwksUrl = 'https://idp.example.com/.well-known/jwks.json';

export function synth(props: LogbookStackProps = {}, stackName = 'Logbook') {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new LogbookStack(app, stackName, { ...props, settings: { jwtJwksUrl, ...props.settings } });
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
  return { stack, template, resources, ofType, functionId, statementsOf };
}
