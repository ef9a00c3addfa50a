/**
 * Local stand-ins for the AWS services a function talks to besides the database: Secrets Manager (the awsJson1_1
 * operations GetSecretValue and PutSecretValue, with a per-secret access list like IAM's), CloudFormation's
 * ResponseURL, and SQS's SendMessage.
 */
import { createHash, randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Stubs {
  secretsManagerUrl: string;
  responseUrl: string;
  /** Every Secrets Manager call, in order: operation (GetSecretValue, PutSecretValue) and secret. */
  calls: { operation: string; secretId: string }[];
  /** What each secret holds now. */
  secrets: Map<string, string>;
  /** The answers sent to CloudFormation. */
  responses: Record<string, any>[];
  close(): void;
}

/** `allowed`: the operations the function's role may call on each secret (IAM); anything else is AccessDenied. */
export async function startStubs(
  initial: Record<string, string>,
  allowed: Record<string, ('GetSecretValue' | 'PutSecretValue')[]>,
): Promise<Stubs> {
  const servers: Server[] = [];
  const listen = async (serve: (body: string, target: string | undefined) => { status: number; body: string }) => {
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk) => (body += chunk));
      req.on('end', () => {
        const reply = serve(body, req.headers['x-amz-target'] as string | undefined);
        res.writeHead(reply.status, { 'content-type': 'application/x-amz-json-1.1' }).end(reply.body);
      });
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  };
  const secrets = new Map(Object.entries(initial));
  const calls: Stubs['calls'] = [];
  const responses: Stubs['responses'] = [];
  const error = (status: number, type: string) => ({ status, body: JSON.stringify({ __type: type, message: type }) });
  const secretsManagerUrl = await listen((body, target) => {
    const request = JSON.parse(body) as { SecretId: string; SecretString?: string };
    const operation = String(target).replace(/^secretsmanager\./, '');
    calls.push({ operation, secretId: request.SecretId });
    if (!allowed[request.SecretId]?.includes(operation as 'GetSecretValue')) return error(400, 'AccessDeniedException');
    if (operation === 'GetSecretValue')
      return {
        status: 200,
        body: JSON.stringify({ ARN: request.SecretId, SecretString: secrets.get(request.SecretId) }),
      };
    secrets.set(request.SecretId, request.SecretString!);
    return {
      status: 200,
      body: JSON.stringify({ ARN: request.SecretId, VersionId: `v${calls.length}`, VersionStages: ['AWSCURRENT'] }),
    };
  });
  const cloudFormation = await listen((body) => {
    responses.push(JSON.parse(body));
    return { status: 200, body: '' };
  });
  return {
    secretsManagerUrl,
    responseUrl: `${cloudFormation}/response`,
    calls,
    secrets,
    responses,
    close: () => {
      for (const server of servers) server.close();
    },
  };
}

export interface SqsStub {
  /** The endpoint (AWS_ENDPOINT_URL_SQS) and the URL of its one queue. */
  endpoint: string;
  queueUrl: string;
  /** The messages sent so far, in order. */
  messages: { messageId: string; body: string; delaySeconds: number }[];
  close(): void;
}

/**
 * A local stand-in for SQS's SendMessage (the awsJson1_0 protocol of @aws-sdk/client-sqs, with the MD5 of the body
 * the client checks): it keeps what is sent; the test hands the messages to a worker as Lambda's event source would.
 */
export async function startSqsStub(): Promise<SqsStub> {
  const messages: SqsStub['messages'] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      const target = String(req.headers['x-amz-target']);
      const reply = (status: number, value: unknown) =>
        res.writeHead(status, { 'content-type': 'application/x-amz-json-1.0' }).end(JSON.stringify(value));
      if (target !== 'AmazonSQS.SendMessage') return reply(400, { __type: 'InvalidAction', message: target });
      const request = JSON.parse(body) as { MessageBody: string; DelaySeconds?: number };
      const messageId = randomUUID();
      messages.push({ messageId, body: request.MessageBody, delaySeconds: request.DelaySeconds ?? 0 });
      reply(200, {
        MessageId: messageId,
        MD5OfMessageBody: createHash('md5').update(request.MessageBody).digest('hex'),
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { endpoint, queueUrl: `${endpoint}/000000000000/logbook-work`, messages, close: () => server.close() };
}

export interface CognitoStub {
  /** The endpoint (AWS_ENDPOINT_URL_COGNITO_IDENTITY_PROVIDER). */
  endpoint: string;
  /** The pool's logins by username (the e-mail address), with their attributes. */
  logins: Map<string, Record<string, string>>;
  /** Every call, in order: operation and username. */
  calls: { operation: string; username: string; request: Record<string, unknown> }[];
  /** While set, every call fails with this status and error type, as a pool that is down or throttles would. */
  failing?: { status: number; type: string };
  close(): void;
}

/**
 * A local stand-in for a Cognito user pool's AdminCreateUser and AdminDeleteUser (the awsJson1_1 protocol of
 * @aws-sdk/client-cognito-identity-provider), answering UsernameExistsException and UserNotFoundException as the
 * service does.
 */
export async function startCognitoStub(): Promise<CognitoStub> {
  const stub: CognitoStub = { endpoint: '', logins: new Map(), calls: [], close: () => server.close() };
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      const reply = (status: number, value: unknown) =>
        res.writeHead(status, { 'content-type': 'application/x-amz-json-1.1' }).end(JSON.stringify(value));
      const error = (status: number, type: string) => reply(status, { __type: type, message: type });
      const operation = String(req.headers['x-amz-target']).replace(/^AWSCognitoIdentityProviderService\./, '');
      const request = JSON.parse(body) as { Username: string; UserAttributes?: { Name: string; Value: string }[] };
      stub.calls.push({ operation, username: request.Username, request });
      if (stub.failing) return error(stub.failing.status, stub.failing.type);
      if (operation === 'AdminCreateUser') {
        if (stub.logins.has(request.Username)) return error(400, 'UsernameExistsException');
        const attributes = Object.fromEntries((request.UserAttributes ?? []).map((a) => [a.Name, a.Value]));
        stub.logins.set(request.Username, attributes);
        return reply(200, { User: { Username: randomUUID(), Enabled: true, UserStatus: 'FORCE_CHANGE_PASSWORD' } });
      }
      if (operation === 'AdminDeleteUser') {
        if (!stub.logins.delete(request.Username)) return error(400, 'UserNotFoundException');
        return reply(200, {});
      }
      return error(400, 'InvalidAction');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  stub.endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return stub;
}
