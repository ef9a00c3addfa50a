import { type CfnElement, Stack } from 'aws-cdk-lib';
import { LogGroupLogDestination, WebSocketApi, WebSocketStage } from 'aws-cdk-lib/aws-apigatewayv2';
import { WebSocketLambdaIntegration, WebSocketMockIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { gatewayOnlyMessageTypes, messageRouteSelection } from '#shared/live-query/protocol.ts';
import { webSocketAccessLog } from './access-log.ts';
import { acknowledge } from './nag.ts';

export interface AgentChannelProps {
  /** The Lambda serving $connect, $disconnect and $default (functions/ws, one bundle). */
  handler: IFunction;
  throttle: { rateLimit: number; burstLimit: number };
  logRetention: RetentionDays;
}

/** The stage agents connect to: wss://…/live. */
const stageName = 'live';

/**
 * The agents' WebSocket API (docs/ARCHITECTURE.md): $connect, $disconnect and $default, and the stage whose management
 * endpoint relays live queries to connected agents.
 */
export class AgentChannel extends Construct {
  readonly api: WebSocketApi;
  readonly stage: WebSocketStage;

  constructor(scope: Construct, id: string, props: AgentChannelProps) {
    super(scope, id);
    // Not "Default": CDK drops that id from logical IDs, and the route's integration would collide with the route.
    const integration = (name: string) => ({
      integration: new WebSocketLambdaIntegration(`${name}Integration`, props.handler),
    });
    this.api = new WebSocketApi(this, 'Api', {
      apiName: `${Stack.of(this).stackName}-agents`,
      description: "Logbook: the agents' live-query channel",
      routeSelectionExpression: messageRouteSelection,
      connectRouteOptions: integration('Connect'),
      disconnectRouteOptions: integration('Disconnect'),
      defaultRouteOptions: integration('Default'),
    });
    // The keep-alive is taken by API Gateway itself: a MOCK integration answering 200, no route response (the agent
    // gets no reply, as from $default), no Lambda invocation.
    for (const type of gatewayOnlyMessageTypes)
      this.api.addRoute(type, {
        integration: new WebSocketMockIntegration(`${type[0]!.toUpperCase()}${type.slice(1)}Integration`, {
          requestTemplates: { 'application/json': JSON.stringify({ statusCode: 200 }) },
          templateSelectionExpression: '\\$default',
        }),
      });
    const accessLogs = new LogGroup(this, 'AccessLogs', { retention: props.logRetention });
    this.stage = new WebSocketStage(this, 'Stage', {
      webSocketApi: this.api,
      stageName,
      autoDeploy: true,
      throttle: props.throttle,
      accessLogSettings: { destination: new LogGroupLogDestination(accessLogs), format: webSocketAccessLog },
    });
    acknowledge(
      this,
      'APIG4',
      'Agents authenticate at $connect with their enrollment token, checked by the handler (shared/live-query/connections.ts)',
    );
  }

  /** https://{api}.execute-api.{region}.amazonaws.com/live: WS_MANAGEMENT_ENDPOINT of the relaying functions. */
  get managementEndpoint(): string {
    return this.stage.callbackUrl;
  }

  /** Lets `grantee` post to and close the connections of this API's stage, and of no other API. */
  grantRelay(grantee: IFunction): void {
    this.stage.grantManagementApiAccess(grantee);
    const api = Stack.of(this).getLogicalId(this.api.node.defaultChild as CfnElement);
    acknowledge(
      grantee.role!,
      `IAM5[Resource::arn:<AWS::Partition>:execute-api:<AWS::Region>:<AWS::AccountId>:<${api}>/${stageName}/*/@connections/*]`,
      'Connection ids are only known at run time; the grant names this API and its stage',
    );
  }
}
