import { Duration, Stack } from 'aws-cdk-lib';
import {
  CorsHttpMethod,
  DomainName,
  HttpApi,
  HttpMethod,
  HttpRoute,
  HttpRouteKey,
  HttpStage,
  LogGroupLogDestination,
  SecurityPolicy,
} from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import { Certificate } from 'aws-cdk-lib/aws-certificatemanager';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { httpAccessLog } from './access-log.ts';
import { acknowledge } from './nag.ts';

export interface RestApiProps {
  /** The route table (functions/routes.ts): `METHOD /path` → its handler module under functions/. */
  routes: Record<string, { handler: string }>;
  /** What answers a request no route takes (API Gateway's $default route): the service's 404 or 405 with Allow. */
  defaultRoute: { handler: string };
  /** The Lambda serving a handler module. */
  functionOf: (handler: string) => IFunction;
  /** Browser origins CORS allows (the viewer's); none: no browser origin is. */
  corsOrigins: string[];
  throttle: { rateLimit: number; burstLimit: number };
  logRetention: RetentionDays;
  /** A custom domain (apiDomainName) and its ACM certificate of this region (apiCertificateArn), TLS 1.2 minimum. */
  domain?: { name: string; certificateArn: string };
}

/** The route table's key split into API Gateway's method and path (`GET /api/v1/devices/{id}`). */
export function parseRouteKey(key: string): { method: HttpMethod; path: string } {
  const [method, path] = key.split(' ') as [keyof typeof HttpMethod, string];
  return { method: HttpMethod[method], path };
}

/**
 * The HTTP API: every route of functions/routes.ts, generated from the table, each integrated with the Lambda of its
 * route group (payload format 2.0, as infra/local/http-gateway.ts emulates). Authentication happens in the handlers
 * (user JWTs, API keys and agent tokens on one route), so API Gateway authorizes nothing itself.
 */
export class RestApi extends Construct {
  readonly api: HttpApi;
  readonly stage: HttpStage;
  private readonly domainName?: string;

  constructor(scope: Construct, id: string, props: RestApiProps) {
    super(scope, id);
    this.api = new HttpApi(this, 'Api', {
      // Named after the stack, so that each stage's API is told apart in the console.
      apiName: `${Stack.of(this).stackName}-api`,
      description: 'Logbook: logging, audit and hierarchy API',
      createDefaultStage: false,
      ...(props.corsOrigins.length > 0 && {
        corsPreflight: {
          allowOrigins: props.corsOrigins,
          allowMethods: [
            CorsHttpMethod.GET,
            CorsHttpMethod.POST,
            CorsHttpMethod.PUT,
            CorsHttpMethod.PATCH,
            CorsHttpMethod.DELETE,
          ],
          allowHeaders: ['authorization', 'content-type', 'x-api-key', 'idempotency-key'],
          exposeHeaders: ['content-disposition', 'retry-after'],
          maxAge: Duration.hours(1),
        },
      }),
    });
    const accessLogs = new LogGroup(this, 'AccessLogs', { retention: props.logRetention });
    const domain =
      props.domain &&
      new DomainName(this, 'Domain', {
        domainName: props.domain.name,
        certificate: Certificate.fromCertificateArn(this, 'Certificate', props.domain.certificateArn),
        securityPolicy: SecurityPolicy.TLS_1_2,
      });
    this.domainName = props.domain?.name;
    this.stage = new HttpStage(this, 'Stage', {
      httpApi: this.api,
      stageName: '$default',
      autoDeploy: true,
      throttle: props.throttle,
      accessLogSettings: { destination: new LogGroupLogDestination(accessLogs), format: httpAccessLog },
      ...(domain && { domainMapping: { domainName: domain } }),
    });
    const integrations = new Map<string, HttpLambdaIntegration>();
    const integrationOf = (handler: string) => {
      const fn = props.functionOf(handler);
      const known = integrations.get(fn.node.path);
      if (known) return known;
      const integration = new HttpLambdaIntegration(`${fn.node.id}Integration`, fn);
      integrations.set(fn.node.path, integration);
      return integration;
    };
    for (const [key, route] of Object.entries(props.routes)) {
      const { method, path } = parseRouteKey(key);
      this.api.addRoutes({ path, methods: [method], integration: integrationOf(route.handler) });
    }
    // Without it API Gateway answers unmatched requests itself, outside the error envelope.
    new HttpRoute(this, 'DefaultRoute', {
      httpApi: this.api,
      routeKey: HttpRouteKey.DEFAULT,
      integration: integrationOf(props.defaultRoute.handler),
    });
    acknowledge(
      this,
      'APIG4',
      'Every route authenticates in its handler (user JWTs from the JWKS, organization API keys, agent tokens; shared/http/authenticate.ts), which API Gateway authorizers cannot combine; health, the OpenAPI document and enrollment (by enrollment key) are public by design',
    );
  }

  /** The API's base URL: its custom domain's when it has one (the execute-api one keeps answering too). */
  get url(): string {
    return this.domainName ? `https://${this.domainName}/` : this.stage.url;
  }
}
