import { Duration, Stack } from 'aws-cdk-lib';
import {
  CfnApi,
  DomainName,
  HttpApi,
  HttpMethod,
  HttpStage,
  type IHttpApi,
  LogGroupLogDestination,
  SecurityPolicy,
} from 'aws-cdk-lib/aws-apigatewayv2';
import { Certificate } from 'aws-cdk-lib/aws-certificatemanager';
import { ServicePrincipal } from 'aws-cdk-lib/aws-iam';
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

/** What a browser may send and read across origins (the viewer's calls). */
const cors = {
  allowMethods: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'],
  allowHeaders: ['authorization', 'content-type', 'x-api-key', 'idempotency-key'],
  exposeHeaders: ['content-disposition', 'retry-after'],
  maxAge: Duration.hours(1).toSeconds(),
};

/** The path of the $default route in an OpenAPI document API Gateway imports. */
const defaultRoutePath = '/$default';

/**
 * The document API Gateway imports as the HTTP API (its `Body`): each route key of the table as a path and method,
 * the $default route as `/$default`'s any-method, each integrated by reference with the Lambda of its route group
 * (one integration per function: payload format 2.0, as infra/local/http-gateway.ts emulates), and CORS. It holds
 * routing only: the service's own OpenAPI document (GET /api/v1/openapi.json) stays the contract of the requests.
 */
function importDocument(props: {
  title: string;
  description: string;
  routes: Record<string, { integration: string }>;
  defaultIntegration: string;
  /** Integration name → the invocation URI of its function. */
  integrations: Map<string, string>;
  corsOrigins: string[];
}): Record<string, unknown> {
  const integrationRef = (name: string) => ({
    'x-amazon-apigateway-integration': { $ref: `#/components/x-amazon-apigateway-integrations/${name}` },
  });
  // Operations answer what their function answers: the document declares no response of its own.
  const responses = { default: { description: "The function's answer" } };
  const paths: Record<string, Record<string, unknown>> = {};
  for (const [key, { integration }] of Object.entries(props.routes)) {
    const { method, path } = parseRouteKey(key);
    const parameters = [...path.matchAll(/\{([^}]+)\}/g)].map(([, name]) => ({
      name,
      in: 'path',
      required: true,
      schema: { type: 'string' },
    }));
    paths[path] ??= {};
    paths[path][method.toLowerCase()] = {
      ...(parameters.length > 0 && { parameters }),
      responses,
      ...integrationRef(integration),
    };
  }
  paths[defaultRoutePath] = {
    'x-amazon-apigateway-any-method': { isDefaultRoute: true, responses, ...integrationRef(props.defaultIntegration) },
  };
  return {
    openapi: '3.0.1',
    info: { title: props.title, description: props.description, version: '1.0' },
    paths,
    components: {
      'x-amazon-apigateway-integrations': Object.fromEntries(
        [...props.integrations].map(([name, uri]) => [
          name,
          { type: 'aws_proxy', httpMethod: 'POST', uri, payloadFormatVersion: '2.0', connectionType: 'INTERNET' },
        ]),
      ),
    },
    ...(props.corsOrigins.length > 0 && {
      'x-amazon-apigateway-cors': { allowOrigins: props.corsOrigins, ...cors },
    }),
  };
}

/**
 * The HTTP API: every route of functions/routes.ts, imported from one OpenAPI document generated from the table
 * (importDocument), each integrated with the Lambda of its route group. A route costs no CloudFormation resource and
 * a function one invoke permission, whatever its number of routes (docs/operations.md "How the stack fits a thousand
 * routes"). Authentication happens in the handlers (user JWTs, API keys and agent tokens on one route), so API
 * Gateway authorizes nothing itself.
 */
export class RestApi extends Construct {
  readonly api: IHttpApi;
  readonly stage: HttpStage;
  /** The imported document's resource: its `Body` is importDocument's. */
  readonly resource: CfnApi;
  private readonly domainName?: string;

  constructor(scope: Construct, id: string, props: RestApiProps) {
    super(scope, id);
    const stack = Stack.of(this);
    const integrations = new Map<string, string>();
    const names = new Map<string, string>();
    const integrationOf = (handler: string) => {
      const fn = props.functionOf(handler);
      const known = names.get(fn.node.path);
      if (known) return known;
      const name = fn.node.id;
      names.set(fn.node.path, name);
      // The invocation URI API Gateway's console and exports use (the bare function ARN works too).
      integrations.set(
        name,
        `arn:${stack.partition}:apigateway:${stack.region}:lambda:path/2015-03-31/functions/${fn.functionArn}/invocations`,
      );
      return name;
    };
    const routes = Object.fromEntries(
      Object.entries(props.routes).map(([key, route]) => [key, { integration: integrationOf(route.handler) }]),
    );
    // Without it API Gateway answers unmatched requests itself, outside the error envelope.
    const defaultIntegration = integrationOf(props.defaultRoute.handler);
    this.resource = new CfnApi(this, 'Api', {
      body: importDocument({
        // Named after the stack, so that each stage's API is told apart in the console.
        title: `${stack.stackName}-api`,
        description: 'Logbook: logging, audit and hierarchy API',
        routes,
        defaultIntegration,
        integrations,
        corsOrigins: props.corsOrigins,
      }),
      // A document API Gateway only partly understands fails the deploy instead of leaving routes out.
      failOnWarnings: true,
    });
    this.api = HttpApi.fromHttpApiAttributes(this, 'Imported', {
      httpApiId: this.resource.ref,
      apiEndpoint: this.resource.attrApiEndpoint,
    });
    // One permission per function, for any route of this API: the API's document alone says which routes reach it.
    for (const fn of new Set(
      [...Object.values(props.routes), props.defaultRoute].map((r) => props.functionOf(r.handler)),
    ))
      fn.addPermission('HttpApiInvoke', {
        principal: new ServicePrincipal('apigateway.amazonaws.com'),
        sourceArn: stack.formatArn({ service: 'execute-api', resource: this.api.apiId, resourceName: '*/*' }),
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
    // Deploys every import of the document: a route added, moved or removed is live when the stack update ends.
    this.stage = new HttpStage(this, 'Stage', {
      httpApi: this.api,
      stageName: '$default',
      autoDeploy: true,
      throttle: props.throttle,
      accessLogSettings: { destination: new LogGroupLogDestination(accessLogs), format: httpAccessLog },
      ...(domain && { domainMapping: { domainName: domain } }),
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
