import type { Tracer } from '@aws-lambda-powertools/tracer';
import { inLambda, serviceName } from './service.ts';

/**
 * AWS X-Ray tracing (Powertools Tracer) of the Lambda functions, whose tracing mode is Active (infra/aws/functions.ts).
 * Loaded in Lambda only, where the Powertools layer provides it with the X-Ray SDK: elsewhere the SDK is not even
 * imported. POWERTOOLS_TRACE_ENABLED=false switches it off in Lambda.
 */
export const tracer: Tracer | undefined = inLambda
  ? new (await import('@aws-lambda-powertools/tracer')).Tracer({ serviceName })
  : undefined;

/** An AWS SDK v3 client whose calls appear as subsegments of the trace (the client itself outside Lambda). */
export function traced<Client>(client: Client): Client {
  return tracer ? tracer.captureAWSv3Client(client) : client;
}
