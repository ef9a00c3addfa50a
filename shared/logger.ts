import { Logger } from '@aws-lambda-powertools/logger';
import { serviceName } from './observability/service.ts';

/** The service's structured logger, one per cold start (Powertools for AWS Lambda). */
export const logger = new Logger({
  serviceName,
  logLevel: (process.env.LOG_LEVEL ?? (process.env.NODE_ENV === 'test' ? 'WARN' : 'INFO')) as 'INFO',
});
