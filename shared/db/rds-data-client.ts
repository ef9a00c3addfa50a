import { RDSDataClient } from '@aws-sdk/client-rds-data';

/**
 * The RDS Data API client (DESIGN.md "Layout": one adapter module per AWS SDK client). In Lambda the
 * region and credentials come from the function's environment; `endpoint` points it at the local
 * Data API of infra/local/data-api-server.ts instead, which checks no signature.
 */
export function createRdsDataClient(options: { endpoint?: string } = {}): RDSDataClient {
  if (!options.endpoint) return new RDSDataClient({});
  return new RDSDataClient({
    endpoint: options.endpoint,
    region: process.env.AWS_REGION || 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
}
