import { type CfnElement, Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import { Effect, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { BlockPublicAccess, Bucket, BucketEncryption, ObjectLockRetention, ObjectOwnership } from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';
import { acknowledge } from './nag.ts';

/** What reads or writes the witness: a function with its settings. */
type WitnessUser = IFunction & { addEnvironment(key: string, value: string): unknown };

/**
 * The outside witness of the audit anchors (docs/audit-streaming.md "The outside witness"): an S3 bucket with Object
 * Lock in compliance mode and a default retention (witnessRetentionDays, 400), so that no one, the account's root
 * included, can delete or overwrite a witnessed anchor before it expires. Only the anchor function writes to it.
 */
export class AnchorWitness extends Construct {
  readonly bucket: Bucket;
  /** AUDIT_WITNESS of the functions: s3://<bucket>/anchors. */
  readonly location: string;

  constructor(scope: Construct, id: string, props: { retentionDays: number }) {
    super(scope, id);
    this.bucket = new Bucket(this, 'Bucket', {
      encryption: BucketEncryption.S3_MANAGED,
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      objectOwnership: ObjectOwnership.BUCKET_OWNER_ENFORCED,
      versioned: true,
      objectLockEnabled: true,
      objectLockDefaultRetention: ObjectLockRetention.compliance(Duration.days(props.retentionDays)),
      // A locked object cannot be replaced, so a noncurrent version exists only of a failed upload's leftovers.
      lifecycleRules: [
        {
          noncurrentVersionExpiration: Duration.days(props.retentionDays + 1),
          abortIncompleteMultipartUploadAfter: Duration.days(1),
        },
      ],
      // The witness outlives the stack: a deleted stack must not take its proof with it.
      removalPolicy: RemovalPolicy.RETAIN,
    });
    acknowledge(
      this.bucket,
      'S1',
      'Every object is written once by the anchor function and locked in compliance mode; CloudTrail records its API calls, and server access logs would add a second bucket billed while idle',
    );
    this.location = `s3://${this.bucket.bucketName}/anchors`;
  }

  /** Lets the anchor function publish anchors (put, with their lock) and compare with them. */
  grantPublish(fn: WitnessUser): void {
    this.grant(fn, ['s3:PutObject', 's3:PutObjectRetention', 's3:GetObject']);
  }

  /** Lets a function list and read the witnessed anchors (GET /audit-logs/witness). */
  grantRead(fn: WitnessUser): void {
    this.grant(fn, ['s3:GetObject']);
  }

  private grant(fn: WitnessUser, objectActions: string[]): void {
    fn.grantPrincipal.addToPrincipalPolicy(
      new PolicyStatement({
        effect: Effect.ALLOW,
        actions: objectActions,
        resources: [`${this.bucket.bucketArn}/anchors/*`],
      }),
    );
    fn.grantPrincipal.addToPrincipalPolicy(
      new PolicyStatement({ effect: Effect.ALLOW, actions: ['s3:ListBucket'], resources: [this.bucket.bucketArn] }),
    );
    fn.addEnvironment('AUDIT_WITNESS', this.location);
    const bucket = Stack.of(this).getLogicalId(this.bucket.node.defaultChild as CfnElement);
    acknowledge(
      fn.role!,
      `IAM5[Resource::<${bucket}.Arn>/anchors/*]`,
      'The witness holds one object per anchor, named by organization and seq: the function reads (and the anchor function writes) the objects under anchors/ of this one bucket only',
    );
  }
}
