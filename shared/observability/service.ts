/**
 * Where the code runs, for logs, metrics and traces alike. In Lambda the runtime sets AWS_LAMBDA_FUNCTION_NAME and the
 * stack sets POWERTOOLS_SERVICE_NAME and POWERTOOLS_METRICS_NAMESPACE (infra/aws/functions.ts); `npm start` and the
 * tests set none of them.
 */

/** The `service` of every log line, metric and trace: POWERTOOLS_SERVICE_NAME, else `logbook`. */
export const serviceName = process.env.POWERTOOLS_SERVICE_NAME || 'logbook';

/** Whether this process is a Lambda execution environment: metrics and traces are published only there. */
export const inLambda = Boolean(process.env.AWS_LAMBDA_FUNCTION_NAME);
