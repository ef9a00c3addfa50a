import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import { httpAccessLogFormat, webSocketAccessLogFormat } from './access-log-format.ts';

/** The stages' access-log formats (access-log-format.ts). */
export const httpAccessLog = AccessLogFormat.custom(httpAccessLogFormat);
export const webSocketAccessLog = AccessLogFormat.custom(webSocketAccessLogFormat);
