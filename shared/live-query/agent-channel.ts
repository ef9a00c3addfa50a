/**
 * The one adapter of API Gateway's WebSocket management API (DESIGN.md: one module per AWS SDK
 * client). WS_MANAGEMENT_ENDPOINT is https://{apiId}.execute-api.{region}.amazonaws.com/{stage} in
 * AWS; locally the WebSocket gateway's own http://127.0.0.1:{WS_PORT} (infra/local/ws-gateway.ts).
 */
import { ApiGatewayManagementApiClient, DeleteConnectionCommand, GoneException, PostToConnectionCommand } from '@aws-sdk/client-apigatewaymanagementapi';
import type { ServiceMessage } from './protocol.ts';

let client: { endpoint: string; api: ApiGatewayManagementApiClient } | undefined;

/** Built once per cold start (again only if the endpoint setting changed, as between local test stacks). */
function managementApi(): ApiGatewayManagementApiClient {
  const endpoint = process.env.WS_MANAGEMENT_ENDPOINT;
  if (!endpoint) throw new Error('WS_MANAGEMENT_ENDPOINT is not set');
  if (client?.endpoint !== endpoint) {
    client?.api.destroy();
    client = { endpoint, api: new ApiGatewayManagementApiClient({ endpoint, maxAttempts: 2 }) };
  }
  return client.api;
}

/** Sends one message on a connection; 'gone' when API Gateway no longer knows the connection. */
export async function postToConnection(connectionId: string, message: ServiceMessage): Promise<'sent' | 'gone'> {
  try {
    await managementApi().send(new PostToConnectionCommand({ ConnectionId: connectionId, Data: Buffer.from(JSON.stringify(message)) }));
    return 'sent';
  } catch (error) {
    if (error instanceof GoneException) return 'gone';
    throw error;
  }
}

/** Closes a connection; one that is gone already is fine. */
export async function deleteConnection(connectionId: string): Promise<void> {
  try {
    await managementApi().send(new DeleteConnectionCommand({ ConnectionId: connectionId }));
  } catch (error) {
    if (!(error instanceof GoneException)) throw error;
  }
}
