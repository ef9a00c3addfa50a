import { httpAccessLogFormat, webSocketAccessLogFormat } from '#infra/aws/access-log-format.ts';

/** The `$context` variables of an access-log line, by name (`identity.sourceIp`); absent or empty: none. */
export type AccessLogValues = Record<string, string | number | undefined>;

/** Receives each access-log line a local gateway renders, as the stage's log group would. */
export type AccessLogSink = (line: string) => void;

/**
 * An access-log line as API Gateway writes it: the stage's format with each `$context.<name>` replaced by its value
 * as text, `-` for a variable without one (API Gateway's own rendering of an empty variable).
 */
function render(format: string, values: AccessLogValues): string {
  return format.replace(/\$context\.([A-Za-z.]+)/g, (_, name: string) => {
    const value = values[name];
    return value === undefined || value === '' ? '-' : String(value);
  });
}

export const httpAccessLogLine = (values: AccessLogValues) => render(httpAccessLogFormat, values);
export const webSocketAccessLogLine = (values: AccessLogValues) => render(webSocketAccessLogFormat, values);
