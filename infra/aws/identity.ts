import { join } from 'node:path';
import { Aws, Duration, Fn, RemovalPolicy } from 'aws-cdk-lib';
import {
  AccountRecovery,
  type CfnUserPoolClient,
  FeaturePlan,
  LambdaVersion,
  Mfa,
  OAuthScope,
  StandardThreatProtectionMode,
  UserPool,
  type UserPoolClient,
  UserPoolClientIdentityProvider,
  type UserPoolDomain,
  UserPoolOperation,
} from 'aws-cdk-lib/aws-cognito';
import type { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { userIdClaim } from '#shared/auth/token-claims.ts';
import type { Database } from './database.ts';
import { LogbookFunction, projectRoot } from './functions.ts';

/**
 * `identity: "cognito"`: the stack's own user pool. Nobody signs themselves up: administrators invite users
 * (POST /users makes the login, and Cognito mails the invitation; DELETE /users/{id} removes it); MFA (an authenticator app) is required, threat
 * protection blocks risky sign-ins, and the web pages sign in on the hosted sign-in page (code flow with PKCE). Before each
 * token, a trigger puts the role, scope, partner and organization of the user's Logbook record into it.
 */
export class CognitoIdentity extends Construct {
  readonly userPool: UserPool;
  readonly client: UserPoolClient;
  readonly domain: UserPoolDomain;
  readonly trigger: LogbookFunction;

  constructor(
    scope: Construct,
    id: string,
    props: { database: Database; logRetention: RetentionDays; domainPrefix?: string },
  ) {
    super(scope, id);
    this.userPool = new UserPool(this, 'Users', {
      userPoolName: `${Aws.STACK_NAME}-users`,
      selfSignUpEnabled: false,
      signInAliases: { email: true },
      signInCaseSensitive: false,
      autoVerify: { email: true },
      mfa: Mfa.REQUIRED,
      mfaSecondFactor: { otp: true, sms: false },
      featurePlan: FeaturePlan.PLUS,
      standardThreatProtectionMode: StandardThreatProtectionMode.FULL_FUNCTION,
      passwordPolicy: {
        minLength: 12,
        requireLowercase: true,
        requireUppercase: true,
        requireDigits: true,
        requireSymbols: true,
        tempPasswordValidity: Duration.days(3),
      },
      accountRecovery: AccountRecovery.EMAIL_ONLY,
      deletionProtection: true,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    this.trigger = new LogbookFunction(this, 'PreTokenFunction', {
      entry: join(projectRoot, 'functions/auth/pre-token.ts'),
      description:
        "Logbook: Cognito pre-token-generation trigger: the role, scope, partner and organization of the user's Logbook record into the tokens",
      timeout: Duration.seconds(5),
      logRetention: props.logRetention,
      environment: props.database.connection(props.database.appSecret, 'APP_DB_SECRET_ARN'),
    });
    props.database.grantDataApi(this.trigger, props.database.appSecret);
    this.trigger.node.addDependency(props.database.migration);
    this.userPool.addTrigger(UserPoolOperation.PRE_TOKEN_GENERATION_CONFIG, this.trigger, LambdaVersion.V2_0);
    this.domain = this.userPool.addDomain('SignIn', {
      cognitoDomain: { domainPrefix: props.domainPrefix ?? Fn.join('-', ['logbook', Aws.ACCOUNT_ID]) },
    });
    // The web pages sign in with the authorization code flow and PKCE (web/src/hosted-sign-in.ts): a public client
    // (no secret), and no implicit flow, whose token would travel in the address.
    this.client = this.userPool.addClient('Web', {
      generateSecret: false,
      preventUserExistenceErrors: true,
      supportedIdentityProviders: [UserPoolClientIdentityProvider.COGNITO],
      oAuth: {
        flows: { authorizationCodeGrant: true },
        scopes: [OAuthScope.OPENID, OAuthScope.EMAIL, OAuthScope.PROFILE],
        callbackUrls: ['http://localhost:3000/'],
      },
      idTokenValidity: Duration.hours(1),
      accessTokenValidity: Duration.hours(1),
    });
  }

  /** Where the hosted sign-in page may return to: the deployed web pages (and the extra viewer origins). */
  allowSignInTo(urls: string[]): void {
    const client = this.client.node.defaultChild as CfnUserPoolClient;
    client.callbackUrLs = urls;
    client.logoutUrLs = urls;
  }

  /** Lets `fn` make and remove the pool's logins of the users invited and deleted through the API (shared/auth/logins.ts). */
  grantLogins(fn: LogbookFunction): void {
    fn.addEnvironment('COGNITO_USER_POOL_ID', this.userPool.userPoolId);
    this.userPool.grant(fn, 'cognito-idp:AdminCreateUser', 'cognito-idp:AdminDeleteUser');
  }

  /** The settings with which the functions verify the pool's ID tokens (shared/auth/jwt.ts). */
  jwtEnvironment(): Record<string, string> {
    return {
      JWT_JWKS_URL: `${this.userPool.userPoolProviderUrl}/.well-known/jwks.json`,
      JWT_ISSUER: this.userPool.userPoolProviderUrl,
      JWT_AUDIENCE: this.client.userPoolClientId,
      JWT_CLAIM_USER_ID: userIdClaim,
    };
  }

  /** What the web pages' config.json says of the hosted sign-in: its endpoints and the web client. */
  hostedSignIn(): { authorizeUrl: string; tokenUrl: string; clientId: string; origin: string } {
    const origin = this.domain.baseUrl();
    return {
      authorizeUrl: `${origin}/oauth2/authorize`,
      tokenUrl: `${origin}/oauth2/token`,
      clientId: this.client.userPoolClientId,
      origin,
    };
  }

  /** The link that signs in: the web pages at `pages`, which leave at once for the hosted sign-in page. */
  signInUrl(pages: string): string {
    return `${pages}?sign-in`;
  }
}
