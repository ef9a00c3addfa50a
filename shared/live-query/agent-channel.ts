/**
 * The one adapter of API Gateway's WebSocket management API (docs/ARCHITECTURE.md: one module per AWS SDK
 * client). WS_MANAGEMENT_ENDPOINT is https://{apiId}.execute-api.{region}.amazonaws.com/{stage} in
 * AWS; locally the WebSocket gateway's own http://127.0.0.1:{WS_PORT} (infra/local/ws-gateway.ts).
 * The client is imported on first use: a cold start that never posts (most $connect and $disconnect
 * invocations) does not load it.
 */
import type { ApiGatewayManagementApiClient } from '@aws-sdk/client-apigatewaymanagementapi';
import { traced } from '../observability/tracer.ts';
import type { ServiceMessage } from './protocol.ts';

type Sdk = typeof import('@aws-sdk/client-apigatewaymanagementapi');

let sdk: Promise<Sdk> | undefined;
let client: { endpoint: string; api: ApiGatewayManagementApiClient } | undefined;

/** Built once per cold start (again only if the endpoint setting changed, as between local test stacks). */
async function managementApi(): Promise<{ api: ApiGatewayManagementApiClient; sdk: Sdk }> {
  const endpoint = process.env.WS_MANAGEMENT_ENDPOINT;
  if (!endpoint) throw new Error('WS_MANAGEMENT_ENDPOINT is not set');
  sdk ??= import('@aws-sdk/client-apigatewaymanagementapi');
  const loaded = await sdk;
  if (client?.endpoint !== endpoint) {
    client?.api.destroy();
    client = { endpoint, api: traced(new loaded.ApiGatewayManagementApiClient({ endpoint, maxAttempts: 2 })) };
  }
  return { api: client.api, sdk: loaded };
}

/** API Gateway no longer knows the connection (410). */
const isGone = (error: unknown) => (error as { name?: unknown } | null)?.name === 'GoneException';

/** Sends one message on a connection; 'gone' when API Gateway no longer knows the connection. */
export async function postToConnection(connectionId: string, message: ServiceMessage): Promise<'sent' | 'gone'> {
  const { api, sdk: loaded } = await managementApi();
  try {
    await api.send(
      new loaded.PostToConnectionCommand({ ConnectionId: connectionId, Data: Buffer.from(JSON.stringify(message)) }),
    );
    return 'sent';
  } catch (error) {
    if (isGone(error)) return 'gone';
    throw error;
  }
}

/** Closes a connection; one that is gone already is fine. */
export async function deleteConnection(connectionId: string): Promise<void> {
  const { api, sdk: loaded } = await managementApi();
  try {
    await api.send(new loaded.DeleteConnectionCommand({ ConnectionId: connectionId }));
  } catch (error) {
    if (!isGone(error)) throw error;
  }
}
