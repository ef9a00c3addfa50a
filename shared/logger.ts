import { Logger } from '@aws-lambda-powertools/logger';
import { serviceName } from './observability/service.ts';

/**
 * The service's structured logger, one per cold start (Powertools for AWS Lambda). In Lambda every line carries the
 * invocation's request id, cold start and route (shared/observability/handler.ts).
 */
export const logger = new Logger({
  serviceName,
  logLevel: (process.env.LOG_LEVEL ?? (process.env.NODE_ENV === 'test' ? 'WARN' : 'INFO')) as 'INFO',
});

/** Test environments (NODE_ENV=test), where the specification silences the audit writer's lines. */
const quiet = () => process.env.NODE_ENV === 'test';

/**
 * The lines whose text the specification fixes, printed as it
 * writes them: one console line each, which Lambda's runtime stamps with the request id. The only console output
 * of shared/ (biome.json's noConsole).
 */
export const specifiedLog = {
  auditWriteFailed(action: string, error: unknown): void {
    if (!quiet()) console.error('[audit] Failed to write audit log:', action, error);
  },
  auditEventDropped(action: string): void {
    if (!quiet()) console.warn('[audit] Dropped event (no orgId):', action);
  },
  agentResponseUnreadable(detail: string): void {
    console.error(`Failed to parse agent response for event ${detail}`);
  },
  agentLogBatchFailed(deviceId: string, error: unknown): void {
    console.error(`[AgentLogs] Error batch inserting logs for device ${deviceId}`, error);
  },
  /** The device event logs' counterpart of agentLogBatchFailed. */
  eventLogBatchFailed(deviceId: string, error: unknown): void {
    console.error(`[EventLogs] Error batch inserting events for device ${deviceId}`, error);
  },
};
