import { RDSDataClient } from '@aws-sdk/client-rds-data';
import { traced } from '../observability/tracer.ts';

/**
 * The RDS Data API client, imported on first use
 * (shared/db/client.ts). In Lambda the region and credentials come from the function's environment, and its calls
 * are traced; `endpoint` points it at the local Data API of infra/local/data-api-server.ts instead, which checks no
 * signature.
 */
export function createRdsDataClient(options: { endpoint?: string } = {}): RDSDataClient {
  if (!options.endpoint) return traced(new RDSDataClient({}));
  return new RDSDataClient({
    endpoint: options.endpoint,
    region: process.env.AWS_REGION || 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
}
