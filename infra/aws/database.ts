import { join } from 'node:path';
import { CustomResource, Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import { BackupPlan, BackupResource } from 'aws-cdk-lib/aws-backup';
import { SubnetType, Vpc } from 'aws-cdk-lib/aws-ec2';
import { type IGrantable, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { RetentionDays } from 'aws-cdk-lib/aws-logs';
import {
  AuroraPostgresEngineVersion,
  type CfnDBCluster,
  ClusterInstance,
  Credentials,
  DatabaseCluster,
  DatabaseClusterEngine,
} from 'aws-cdk-lib/aws-rds';
import { type ISecret, Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { Construct } from 'constructs';
import { roleNames } from '#shared/db/roles.ts';
import { LogbookFunction, projectRoot } from './functions.ts';
import { acknowledge } from './nag.ts';

export interface DatabaseProps {
  maxCapacityAcu: number;
  autoPauseMinutes: number;
  deletionProtection: boolean;
  snapshotOnDelete: boolean;
  logRetention: RetentionDays;
  /** A daily AWS Backup plan of the cluster, each recovery point kept 35 days. */
  backupPlan: boolean;
}

/** The database name inside the cluster. */
export const databaseName = 'logbook';

/** The login of the cluster's administrator: it owns the database and runs the migrations as logbook_owner. */
const administrator = 'logbook_admin';

/**
 * The Data API operations shared/db/data-api.ts calls (BatchExecuteStatement is never called); granted on this
 * cluster only (grantDataApiAccess would also grant its admin secret).
 */
const dataApiActions = [
  'rds-data:ExecuteStatement',
  'rds-data:BeginTransaction',
  'rds-data:CommitTransaction',
  'rds-data:RollbackTransaction',
];

/**
 * Aurora PostgreSQL 17 Serverless v2 with the Data API (docs/ARCHITECTURE.md): pauses at 0 ACU, in isolated subnets
 * of a VPC without NAT gateway (only the Data API reaches it), encrypted at rest. One secret per database role: the
 * administrator's (owner), the API's (logbook_app) and the retention worker's (logbook_audit_admin). The migration
 * custom resource applies the migrations on every deploy, sets the app role's password from its secret, and gives
 * the audit-admin role a new password that it writes into that role's secret without being able to read it: only
 * the retention function reads the audit-admin secret.
 */
export class Database extends Construct {
  readonly cluster: DatabaseCluster;
  readonly ownerSecret: ISecret;
  readonly appSecret: Secret;
  readonly auditAdminSecret: Secret;
  readonly migration: CustomResource;

  constructor(scope: Construct, id: string, props: DatabaseProps) {
    super(scope, id);
    const vpc = new Vpc(this, 'Vpc', {
      maxAzs: 2,
      natGateways: 0,
      subnetConfiguration: [{ name: 'database', subnetType: SubnetType.PRIVATE_ISOLATED, cidrMask: 24 }],
    });

    this.cluster = new DatabaseCluster(this, 'Cluster', {
      engine: DatabaseClusterEngine.auroraPostgres({ version: AuroraPostgresEngineVersion.VER_17_4 }),
      writer: ClusterInstance.serverlessV2('Writer', { autoMinorVersionUpgrade: true }),
      serverlessV2MinCapacity: 0,
      serverlessV2MaxCapacity: props.maxCapacityAcu,
      serverlessV2AutoPauseDuration: Duration.minutes(props.autoPauseMinutes),
      enableDataApi: true,
      vpc,
      vpcSubnets: { subnetType: SubnetType.PRIVATE_ISOLATED },
      // RDS keeps the administrator's password in a secret it manages and rotates (ManageMasterUserPassword): the
      // secret and the login never disagree, and the Data API reads the current value on every call.
      credentials: Credentials.fromUsername(administrator),
      manageMasterUserPassword: true,
      defaultDatabaseName: databaseName,
      storageEncrypted: true,
      deletionProtection: props.deletionProtection,
      removalPolicy: props.snapshotOnDelete ? RemovalPolicy.SNAPSHOT : RemovalPolicy.DESTROY,
      backup: { retention: Duration.days(7) },
      copyTagsToSnapshot: true,
      cloudwatchLogsExports: ['postgresql'],
      cloudwatchLogsRetention: props.logRetention,
    });
    this.ownerSecret = Secret.fromSecretCompleteArn(
      this,
      'OwnerSecret',
      (this.cluster.node.defaultChild as CfnDBCluster).attrMasterUserSecretSecretArn,
    );
    if (props.backupPlan) {
      // Recovery points outside the cluster's own 7-day backups, kept 35 days (docs/operations.md "Backups").
      const selection = BackupPlan.daily35DayRetention(this, 'Backup').addSelection('Cluster', {
        resources: [BackupResource.fromRdsDatabaseCluster(this.cluster)],
      });
      acknowledge(
        selection,
        'IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSBackupServiceRolePolicyForBackup]',
        "AWS Backup's own service role policy for taking backups; AWS maintains it as the service's actions change",
      );
    }
    acknowledge(
      vpc,
      'VPC7',
      'The VPC holds only the database, reached through the Data API (HTTPS, IAM-authorized, logged by CloudTrail); nothing else runs in it',
    );
    acknowledge(
      this.cluster,
      'RDS6',
      'Nothing connects to the cluster over the network: the functions use the Data API, which authenticates with a role secret and IAM',
    );
    if (!props.deletionProtection)
      acknowledge(
        this.cluster,
        'RDS10',
        'Deletion protection is switched off for this stage (context deletionProtection=false): a test stage',
      );
    // The cluster's log retention is set by CDK's own LogRetention function (one per stack).
    for (const provider of Stack.of(this).node.children.filter((child) => child.node.id.startsWith('LogRetention'))) {
      acknowledge(
        provider,
        'IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]',
        "CDK's log retention function writes only its own logs",
      );
      acknowledge(
        provider,
        'IAM5[Resource::*]',
        "CDK's log retention function sets the retention of log groups whose names are only known at deploy time",
      );
    }

    const roleSecret = (name: string, username: string, description: string) =>
      new Secret(this, name, {
        description: `Logbook database login of ${username}: ${description}`,
        generateSecretString: {
          secretStringTemplate: JSON.stringify({ username }),
          generateStringKey: 'password',
          excludePunctuation: true,
          passwordLength: 40,
        },
      });
    this.appSecret = roleSecret(
      'AppSecret',
      roleNames.app,
      'the migration custom resource sets this password on the role',
    );
    // The generated password is a placeholder: the migration replaces it, with the role's, before any function runs.
    this.auditAdminSecret = roleSecret(
      'AuditAdminSecret',
      roleNames.auditAdmin,
      'a new password on every deploy, written by the migration custom resource, read by the retention worker alone',
    );
    // The owner's secret is RDS's, rotated by RDS itself (every 7 days unless changed in the RDS console).
    acknowledge(
      this.appSecret,
      'SMG4',
      'Not rotated automatically: a rotation function would need a network path into the isolated subnets (a NAT gateway or endpoints, an idle cost); rotate by changing the secret and redeploying, which sets the role password again',
    );
    acknowledge(
      this.auditAdminSecret,
      'SMG4',
      'Rotated on every deploy by the migration custom resource (a new password set on the role and written into this secret), which needs no network path into the isolated subnets',
    );

    const migrate = new LogbookFunction(this, 'Migrate', {
      entry: join(projectRoot, 'functions/migrate/run.ts'),
      description:
        'Logbook: applies the SQL migrations through the Data API and sets the role logins (custom resource, every deploy)',
      timeout: Duration.minutes(5),
      logRetention: props.logRetention,
      environment: {
        ...this.connection(this.ownerSecret, 'OWNER_DB_SECRET_ARN'),
        APP_DB_SECRET_ARN: this.appSecret.secretArn,
        AUDIT_ADMIN_DB_SECRET_ARN: this.auditAdminSecret.secretArn,
      },
      // shared/db/migrate.ts reads the SQL files beside the module: beside the bundle.
      copy: [[join(projectRoot, 'shared/db/migrations'), 'migrations']],
    });
    this.grantDataApi(migrate, this.ownerSecret);
    this.appSecret.grantRead(migrate);
    // Write-only: the migration stores the audit-admin login it sets, and cannot read it back.
    migrate.addToRolePolicy(
      new PolicyStatement({ actions: ['secretsmanager:PutSecretValue'], resources: [this.auditAdminSecret.secretArn] }),
    );

    this.migration = new CustomResource(this, 'Schema', {
      serviceToken: migrate.functionArn,
      resourceType: 'Custom::LogbookSchema',
      // The function answers before its own 5-minute timeout; a function that cannot even start answers nothing,
      // and this fails the deploy after 10 minutes instead of CloudFormation's default hour.
      serviceTimeout: Duration.minutes(10),
      // A new value on every deploy, so the migrator runs each time and applies whatever is pending.
      properties: { deployedAt: new Date().toISOString() },
    });
    this.migration.node.addDependency(this.cluster);
  }

  /** The environment with which shared/db/client.ts connects as the role of `secret`, held in `secretVariable`. */
  connection(secret: ISecret, secretVariable: string): Record<string, string> {
    return { DB_CLUSTER_ARN: this.cluster.clusterArn, DB_NAME: databaseName, [secretVariable]: secret.secretArn };
  }

  /** Lets `grantee` run statements on this cluster as the role of `secret`, and nothing else. */
  grantDataApi(grantee: IGrantable, secret: ISecret): void {
    grantee.grantPrincipal.addToPrincipalPolicy(
      new PolicyStatement({ actions: dataApiActions, resources: [this.cluster.clusterArn] }),
    );
    secret.grantRead(grantee);
  }
}
