import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { AssetHashType, Aws, type CfnElement, DockerImage, Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import { Certificate } from 'aws-cdk-lib/aws-certificatemanager';
import {
  AllowedMethods,
  Distribution,
  HeadersFrameOption,
  HeadersReferrerPolicy,
  HttpVersion,
  PriceClass,
  ResponseHeadersPolicy,
  S3OriginAccessControl,
  SecurityPolicyProtocol,
  SSLMethod,
  ViewerProtocolPolicy,
} from 'aws-cdk-lib/aws-cloudfront';
import { S3BucketOrigin } from 'aws-cdk-lib/aws-cloudfront-origins';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import { BlockPublicAccess, Bucket, BucketEncryption, ObjectOwnership } from 'aws-cdk-lib/aws-s3';
import { BucketDeployment, CacheControl, Source } from 'aws-cdk-lib/aws-s3-deployment';
import { Construct } from 'constructs';
import { projectRoot } from './functions.ts';
import { acknowledge } from './nag.ts';

const webDir = join(projectRoot, 'web');

export interface ViewerProps {
  /** Of the deployment's log group and of the access logs. */
  logRetention: RetentionDays;
  /** A custom domain (viewerDomainName) and its ACM certificate in us-east-1 (viewerCertificateArn). */
  domain?: { name: string; certificateArn: string };
  /** The API's custom domain, which the page may call beside the region's execute-api endpoints. */
  apiDomainName?: string;
  /**
   * The hosted sign-in of the stack's own user pool (`identity: "cognito"`): written into config.json, its origin
   * (the token endpoint's) allowed to the page's calls.
   */
  signIn?: { authorizeUrl: string; tokenUrl: string; clientId: string; origin: string };
}

/**
 * A name for an account-wide CloudFront resource (policies and origin access controls are global, not regional):
 * the stack's name and its region, so the same stack deploys into a second region of the account.
 */
export function globalName(scope: Construct, suffix: string): string {
  const stack = Stack.of(scope);
  return `${stack.stackName.slice(0, 30)}-${stack.region}-${suffix}`;
}

/** A hash of what the site is built from: web/ (its sources, index.html, build.ts) and the locked dependencies. */
function webSourcesHash(): string {
  const hash = createHash('sha256');
  const add = (path: string) => {
    for (const entry of readdirSync(path, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const full = join(path, entry.name);
      if (entry.isDirectory()) {
        if (entry.name !== 'node_modules' && entry.name !== 'out') add(full);
      } else hash.update(relative(projectRoot, full)).update(readFileSync(full));
    }
  };
  add(webDir);
  return hash.update(readFileSync(join(projectRoot, 'package-lock.json'))).digest('hex');
}

/**
 * Builds the site into `outDir` with web/build.ts's buildWeb (esbuild, offline), in a child process because CDK
 * builds assets synchronously.
 */
export function buildViewerSite(outDir: string): void {
  const script = `import { buildWeb } from ${JSON.stringify(pathToFileURL(join(webDir, 'build.ts')).href)}; await buildWeb(${JSON.stringify(outDir)});`;
  const run = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    cwd: projectRoot,
    stdio: 'inherit',
  });
  if (run.status !== 0) throw new Error('building the audit viewer (web/build.ts) failed');
}

/**
 * The audit viewer (web/), pay-per-use: a private, encrypted S3 bucket (no public access, no website hosting, SSL
 * only) that only CloudFront reads, through Origin Access Control; CloudFront serves it over HTTPS only with security
 * headers. Both log their requests to an access-log bucket whose logs expire with the stack's log retention.
 */
export class Viewer extends Construct {
  readonly bucket: Bucket;
  readonly distribution: Distribution;
  private readonly props: ViewerProps;
  private readonly domainName?: string;

  constructor(scope: Construct, id: string, props: ViewerProps) {
    super(scope, id);
    this.props = props;
    const accessLogs = new Bucket(this, 'AccessLogs', {
      encryption: BucketEncryption.S3_MANAGED,
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      // CloudFront's standard logs are delivered with an ACL.
      objectOwnership: ObjectOwnership.BUCKET_OWNER_PREFERRED,
      lifecycleRules: [{ expiration: Duration.days(props.logRetention) }],
    });
    acknowledge(
      accessLogs,
      'S1',
      "This is the access-log bucket of the viewer's bucket and distribution; logging its own accesses would log into itself",
    );

    this.bucket = new Bucket(this, 'Site', {
      encryption: BucketEncryption.S3_MANAGED,
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      objectOwnership: ObjectOwnership.BUCKET_OWNER_ENFORCED,
      serverAccessLogsBucket: accessLogs,
      serverAccessLogsPrefix: 'site/',
    });

    const connectSrc = [
      "'self'",
      `https://*.execute-api.${Aws.REGION}.${Aws.URL_SUFFIX}`,
      ...(props.apiDomainName ? [`https://${props.apiDomainName}`] : []),
      ...(props.signIn ? [props.signIn.origin] : []),
    ].join(' ');
    const headers = new ResponseHeadersPolicy(this, 'SecurityHeaders', {
      responseHeadersPolicyName: globalName(this, 'viewer-headers'),
      comment: 'Logbook audit viewer: security headers',
      securityHeadersBehavior: {
        // The page talks to the HTTP API of this region only (and to its own origin, for config.json, and with the
        // stack's own user pool to the pool's token endpoint).
        contentSecurityPolicy: {
          contentSecurityPolicy: `default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src ${connectSrc}; base-uri 'none'; form-action 'self'; frame-ancestors 'none'`,
          override: true,
        },
        strictTransportSecurity: { accessControlMaxAge: Duration.days(365), includeSubdomains: true, override: true },
        contentTypeOptions: { override: true },
        frameOptions: { frameOption: HeadersFrameOption.DENY, override: true },
        referrerPolicy: { referrerPolicy: HeadersReferrerPolicy.NO_REFERRER, override: true },
      },
    });
    const originAccessControl = new S3OriginAccessControl(this, 'OriginAccess', {
      originAccessControlName: globalName(this, 'viewer'),
    });
    this.domainName = props.domain?.name;
    this.distribution = new Distribution(this, 'Distribution', {
      comment: 'Logbook audit viewer',
      defaultRootObject: 'index.html',
      ...(props.domain && {
        domainNames: [props.domain.name],
        certificate: Certificate.fromCertificateArn(this, 'Certificate', props.domain.certificateArn),
        minimumProtocolVersion: SecurityPolicyProtocol.TLS_V1_2_2021,
        sslSupportMethod: SSLMethod.SNI,
      }),
      defaultBehavior: {
        origin: S3BucketOrigin.withOriginAccessControl(this.bucket, { originAccessControl }),
        viewerProtocolPolicy: ViewerProtocolPolicy.REDIRECT_TO_HTTPS,
        allowedMethods: AllowedMethods.ALLOW_GET_HEAD,
        responseHeadersPolicy: headers,
        compress: true,
      },
      httpVersion: HttpVersion.HTTP2_AND_3,
      priceClass: PriceClass.PRICE_CLASS_100,
      enableLogging: true,
      logBucket: accessLogs,
      logFilePrefix: 'cloudfront/',
    });
    acknowledge(
      this.distribution,
      'CFR1',
      "The viewer is a static page of an MSP's staff, who may work from anywhere; what it shows is guarded by the API's authentication, not by geography",
    );
    acknowledge(
      this.distribution,
      'CFR2',
      'A WAF web ACL costs a monthly fee while idle; the distribution serves only static files, and the API it calls authenticates and throttles every request',
    );
    if (!props.domain)
      acknowledge(
        this.distribution,
        'CFR4',
        "Without viewerDomainName the distribution uses CloudFront's default certificate, with which CloudFront sets the TLS policy itself; viewers are redirected to HTTPS (with a custom domain: TLS 1.2 minimum)",
      );
  }

  /** The origin CORS must allow: https://<custom domain>, or https://<distribution>.cloudfront.net. */
  get origin(): string {
    return `https://${this.domainName ?? this.distribution.distributionDomainName}`;
  }

  /** The viewer's URL. */
  get url(): string {
    return `${this.origin}/`;
  }

  /**
   * Deploys the site, built from web/ when the stack is synthesized, and its config.json naming the API (and the
   * hosted sign-in, with the stack's own user pool). The hashed
   * assets may be cached for a year; the HTML pages and config.json are revalidated, so a deploy shows at once.
   */
  publish(apiBaseUrl: string): void {
    const { signIn } = this.props;
    const pageSignIn = signIn && {
      authorizeUrl: signIn.authorizeUrl,
      tokenUrl: signIn.tokenUrl,
      clientId: signIn.clientId,
    };
    const site = Source.asset(webDir, {
      assetHashType: AssetHashType.CUSTOM,
      assetHash: webSourcesHash(),
      bundling: {
        image: DockerImage.fromRegistry('public.ecr.aws/docker/library/node:22'),
        local: {
          tryBundle(outDir) {
            buildViewerSite(outDir);
            return true;
          },
        },
      },
    });
    const logGroup = new LogGroup(this, 'DeploymentLogs', {
      retention: this.props.logRetention,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    const revalidated = ['*.html', 'config.json'];
    const assets = new BucketDeployment(this, 'Assets', {
      destinationBucket: this.bucket,
      sources: [site],
      exclude: revalidated,
      cacheControl: [CacheControl.setPublic(), CacheControl.maxAge(Duration.days(365)), CacheControl.immutable()],
      logGroup,
    });
    const pages = new BucketDeployment(this, 'Pages', {
      destinationBucket: this.bucket,
      sources: [site, Source.jsonData('config.json', { apiBaseUrl, ...(signIn && { signIn: pageSignIn }) })],
      exclude: ['*'],
      include: revalidated,
      cacheControl: [CacheControl.noCache()],
      // The pages and config.json, replaced on each deploy; the deployment above prunes the rest (these excluded).
      prune: false,
      logGroup,
    });
    // The pages name the hashed assets: deployed once those are in place, never beside them (no 403 meanwhile).
    pages.node.addDependency(assets);
    // CDK's own function behind BucketDeployment (one per stack): what CDK grants it, on the assets and this bucket.
    const provider = Stack.of(this)
      .node.findAll()
      .find((child) => child.node.id.startsWith('Custom::CDKBucketDeployment'))!;
    const siteBucket = Stack.of(this).getLogicalId(this.bucket.node.defaultChild as CfnElement);
    const grants = [
      'Action::s3:GetObject*',
      'Action::s3:GetBucket*',
      'Action::s3:List*',
      'Action::s3:DeleteObject*',
      'Action::s3:Abort*',
      `Resource::<${siteBucket}.Arn>/*`,
      'Resource::arn:<AWS::Partition>:s3:::cdk-hnb659fds-assets-<AWS::AccountId>-<AWS::Region>/*',
    ];
    acknowledge(
      provider,
      'L1',
      "CDK's BucketDeployment function runs on the Python runtime CDK pins for its AWS CLI layer, and only during deploys",
    );
    acknowledge(
      provider,
      'IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]',
      "CDK's BucketDeployment function writes only its own logs with the basic execution role",
    );
    for (const grant of grants) {
      acknowledge(
        provider,
        `IAM5[${grant}]`,
        "CDK's BucketDeployment function copies the staged site from the CDK assets bucket into the viewer's bucket, with the action families CDK grants it on those two buckets only; it runs only during deploys",
      );
    }
  }
}
