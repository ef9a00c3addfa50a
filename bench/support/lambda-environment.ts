/**
 * Imported first by a benchmark that counts what the functions write to their logs: the environment the stack gives
 * an agent function (infra/aws/functions.ts, infra/aws/logbook-stack.ts), set before any module reads it, so
 * Powertools Logger and Metrics load and write as in Lambda (shared/observability). Tracing is off, as the agent
 * functions ship (`agentTracing`): an untraced invocation writes nothing of X-Ray's to its log.
 */
Object.assign(process.env, {
  NODE_ENV: 'production',
  AWS_LAMBDA_FUNCTION_NAME: 'logbook-bench-agent',
  POWERTOOLS_SERVICE_NAME: 'logbook',
  POWERTOOLS_METRICS_NAMESPACE: 'Logbook',
  POWERTOOLS_TRACE_ENABLED: 'false',
  LOG_LEVEL: 'WARN',
});
