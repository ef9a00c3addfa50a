import { CfnGuardValidator } from '@cdklabs/cdk-validator-cfnguard';
import { type App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';

/**
 * The AWS Control Tower proactive controls (cfn-guard rules) this stack does not follow, each with the reason; every
 * other rule fails the synth. cdk-nag's findings are acknowledged beside their resources (infra/aws/nag.ts).
 */
export const guardExceptions: Record<string, string> = {
  api_gw_v2_authorization_type_configured_check:
    'Routes authenticate in their handlers (user JWTs, API keys and agent tokens on one route; shared/http/authenticate.ts), which API Gateway authorizers cannot combine; health, OpenAPI and enrollment are public by design',
  lambda_function_public_access_prohibited_check:
    "API Gateway's invoke permissions name the API by SourceArn (an Fn::Join of its id), which the rule cannot read as a string; no permission is public",
  lambda_inside_vpc_check:
    'The functions reach the database through the Data API (HTTPS, IAM) and no private resource: a VPC would need NAT or endpoints, an idle cost, for no reachability gained',
  cloudwatch_log_group_retention_period_check:
    'Log retention is the setting logRetentionDays (30 days by default, any CloudWatch period up to 10 years): the audit trail itself lives in the database, not in logs',
  cloudwatch_log_group_encrypted_check:
    'Log groups are encrypted by CloudWatch Logs with its own keys; a customer-managed KMS key is a monthly cost per key and the logs hold no secrets',
  s3_bucket_default_encryption_kms_check:
    "The viewer's buckets hold a public static site and its access logs, encrypted with SSE-S3; CloudFront's log delivery and OAC reads would need key grants for no gain",
  s3_bucket_versioning_enabled_check:
    'The site is rebuilt from the repository on every deploy and the access logs expire after logRetentionDays: versions would only keep what the deploy replaces',
  s3_bucket_logging_enabled_check:
    'Only the access-log bucket has no access logging: logging its own accesses would log into itself',
  s3_event_notifications_enabled_check:
    "Nothing reacts to objects of the viewer's buckets: the site is written by the deployment and read by CloudFront",
  s3_bucket_acl_prohibited_check:
    "CloudFront's standard logging delivers into the access-log bucket with an ACL (ObjectOwnership BucketOwnerPreferred); the site bucket enforces bucket-owner ownership",
  s3_lifecycle_policy_check:
    "The site bucket holds the current build only (each deploy prunes the rest); the access-log bucket's logs expire after logRetentionDays",
  s3_bucket_object_lock_enabled_check:
    'Object Lock would stop each deploy from replacing the site and the access logs from expiring; the audit trail is protected in the database (hash chain, signed anchors)',
  cloudfront_origin_failover_enabled_check:
    'One S3 origin in one region serves a static page; a failover origin would need a replicated bucket for a page the API behind it does not fail over either',
  cloudfront_custom_ssl_certificate_check:
    "Without viewerDomainName the distribution uses CloudFront's default certificate; set viewerDomainName and viewerCertificateArn for a custom one",
  cloudfront_sni_enabled_check:
    "Without a custom certificate CloudFront's default certificate serves HTTPS; with viewerDomainName the distribution uses SNI",
  cloudfront_security_policy_check:
    "CloudFront's default certificate has no configurable TLS policy; with viewerDomainName the minimum is TLS 1.2 (TLSv1.2_2021)",
  rds_instance_enhanced_monitoring_enabled_check:
    'Enhanced monitoring keeps a monitoring agent reporting every few seconds, billed as CloudWatch Logs while Aurora runs; CloudWatch metrics of the cluster remain',
  rds_cluster_iam_authentication_enabled_check:
    'Nothing connects to the cluster directly: the Data API authenticates with IAM and then with the role secret, which IAM database authentication cannot replace',
  sqs_dlq_check:
    "The queues without a dead-letter queue are dead-letter destinations themselves: the daily run's failure queue (Lambda's on-failure destination and EventBridge's dead-letter queue) and the work queue's dead-letter queue",
};

/** cdk-nag's AwsSolutions checks and the Control Tower rules on every synth of `app`, the exceptions above acknowledged. */
export function addPolicyChecks(app: App): void {
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app), new CfnGuardValidator());
  for (const [rule, reason] of Object.entries(guardExceptions))
    Validations.of(app).acknowledge({ id: `cdk-validator-cfnguard::${rule}`, reason });
}
