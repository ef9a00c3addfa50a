import { join } from 'node:path';
import { CustomResource, Duration } from 'aws-cdk-lib';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { Construct } from 'constructs';
import { LogbookFunction, projectRoot } from './functions.ts';
import { acknowledge } from './nag.ts';

export interface AnchorKeyProps {
  /** A new value generates a new key pair on the next deploy (context anchorKeyGeneration). */
  generation: number;
  logRetention: RetentionDays;
}

/**
 * The integrity watch's Ed25519 signing key (docs/retention.md). A custom resource
 * (functions/migrate/anchor-key.ts) generates the pair when the stack is created and whenever `generation`
 * changes: it writes the private key into a secret that it may write but not read and that only the retention
 * worker reads, and answers the public key, which the audit function publishes (AUDIT_ANCHOR_PUBLIC_KEY) with the
 * anchors. Nothing else ever holds the private key; the public key is no secret.
 */
export class AnchorKey extends Construct {
  readonly secret: Secret;
  readonly resource: CustomResource;

  constructor(scope: Construct, id: string, props: AnchorKeyProps) {
    super(scope, id);
    // Created with a random placeholder, replaced by the generator before any function reads it.
    this.secret = new Secret(this, 'PrivateKey', {
      description:
        'Logbook: the Ed25519 private key (PKCS#8 PEM) that signs the audit chain anchors; written by its generator, read by the retention worker alone',
    });
    acknowledge(
      this.secret,
      'SMG4',
      'Rotated by deploying with a new anchorKeyGeneration (docs/operations.md): a signing key rotated on a timer would only multiply the public keys anchor holders must keep',
    );
    const generator = new LogbookFunction(this, 'Generator', {
      entry: join(projectRoot, 'functions/migrate/anchor-key.ts'),
      description: 'Logbook: generates the Ed25519 key that signs the audit anchors (custom resource)',
      timeout: Duration.minutes(1),
      logRetention: props.logRetention,
      environment: { AUDIT_ANCHOR_PRIVATE_KEY_SECRET_ARN: this.secret.secretArn },
    });
    // Write-only: the generator cannot read back the key it wrote.
    generator.addToRolePolicy(
      new PolicyStatement({ actions: ['secretsmanager:PutSecretValue'], resources: [this.secret.secretArn] }),
    );
    this.resource = new CustomResource(this, 'Pair', {
      serviceToken: generator.functionArn,
      resourceType: 'Custom::LogbookAnchorKey',
      // As the migration's (infra/aws/database.ts): a generator that cannot start fails the deploy in minutes, not an hour.
      serviceTimeout: Duration.minutes(5),
      properties: { generation: String(props.generation), secretArn: this.secret.secretArn },
    });
  }

  /** The public key (SPKI PEM) of the current pair. */
  get publicKey(): string {
    return this.resource.getAttString('publicKey');
  }

  /** The key id anchors carry: the first 16 hex digits of the SHA-256 of the public key. */
  get keyId(): string {
    return this.resource.getAttString('keyId');
  }

  /** Lets `signer` read the private key (AUDIT_ANCHOR_PRIVATE_KEY_ARN, loaded at cold start), once it exists. */
  grantSigning(signer: LogbookFunction): void {
    this.secret.grantRead(signer);
    signer.addEnvironment('AUDIT_ANCHOR_PRIVATE_KEY_ARN', this.secret.secretArn);
    signer.node.addDependency(this.resource);
  }
}
