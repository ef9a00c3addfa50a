import { describe, expect, it } from 'vitest';
import { checkSettings, defaultSettings } from '#infra/aws/settings.ts';
import { synth } from '#test/support/stack.ts';

/** A stack whose users sign in to its own Cognito user pool; cdk-nag's and cfn-guard's checks pass on it. */
const pooled = synth({ settings: { identity: 'cognito', jwtJwksUrl: undefined } }, 'Logbook', { policyChecks: true });

describe('identity: "cognito"', () => {
  it('creates a user pool nobody signs up to by themselves, with MFA required and threat protection enforced', () => {
    const [, pool] = pooled.ofType('AWS::Cognito::UserPool')[0]!;
    expect(pool.Properties).toMatchObject({
      AdminCreateUserConfig: { AllowAdminCreateUserOnly: true },
      MfaConfiguration: 'ON',
      EnabledMfas: ['SOFTWARE_TOKEN_MFA'],
      UsernameAttributes: ['email'],
      UserPoolAddOns: { AdvancedSecurityMode: 'ENFORCED' },
      UserPoolTier: 'PLUS',
      DeletionProtection: 'ACTIVE',
    });
    expect(pool.Properties.LambdaConfig.PreTokenGenerationConfig).toEqual({
      LambdaArn: { 'Fn::GetAtt': [pooled.functionId('Cognito pre-token-generation trigger'), 'Arn'] },
      LambdaVersion: 'V2_0',
    });
  });

  it('has a hosted sign-in domain and a public web client of the code flow, returning to the deployed pages', () => {
    expect(pooled.ofType('AWS::Cognito::UserPoolDomain')).toHaveLength(1);
    const [, client] = pooled.ofType('AWS::Cognito::UserPoolClient')[0]!;
    expect(client.Properties).toMatchObject({
      AllowedOAuthFlows: ['code'],
      AllowedOAuthScopes: expect.arrayContaining(['openid', 'email']),
      GenerateSecret: false,
      PreventUserExistenceErrors: 'ENABLED',
      SupportedIdentityProviders: ['COGNITO'],
    });
    expect(JSON.stringify(client.Properties.CallbackURLs)).toContain('DomainName');
    expect(Object.keys(pooled.template.toJSON().Outputs)).toEqual(expect.arrayContaining(['UserPoolId', 'SignInUrl']));
  });

  it("names the hosted sign-in in the pages' config.json and lets the pages call the pool's domain alone", () => {
    // config.json is written at deploy time: the pool's domain and the web client are its deploy-time values.
    const markers = JSON.stringify(
      pooled.ofType('Custom::CDKBucketDeployment').map(([, d]) => d.Properties.SourceMarkers ?? []),
    );
    expect(markers).toMatch(/"Ref":"IdentityUsersSignIn\w+"/);
    expect(markers).toMatch(/"Ref":"IdentityUsersWeb\w+"/);
    const [, policy] = pooled.ofType('AWS::CloudFront::ResponseHeadersPolicy')[0]!;
    const csp = JSON.stringify(
      policy.Properties.ResponseHeadersPolicyConfig.SecurityHeadersConfig.ContentSecurityPolicy.ContentSecurityPolicy,
    );
    expect(csp).toContain('amazoncognito.com');
  });

  it('lets the trigger read the user records through the Data API as the API role, and Cognito invoke it', () => {
    const trigger = pooled.functionId('Cognito pre-token-generation trigger');
    const statements = pooled.statementsOf(trigger);
    const actions = statements.flatMap((s) => [s.Action].flat());
    expect(actions).toEqual(expect.arrayContaining(['rds-data:ExecuteStatement', 'secretsmanager:GetSecretValue']));
    const permissions = pooled
      .ofType('AWS::Lambda::Permission')
      .filter(([, p]) => JSON.stringify(p.Properties.FunctionName).includes(trigger));
    expect(permissions.map(([, p]) => p.Properties.Principal)).toEqual(['cognito-idp.amazonaws.com']);
    expect(pooled.resources[trigger]!.Properties.Environment.Variables).toHaveProperty('APP_DB_SECRET_ARN');
  });

  it('lets the users routes make and remove logins of the pool, and no other function', () => {
    const pool = pooled.ofType('AWS::Cognito::UserPool')[0]![0];
    const users = pooled.functionId('Logbook auth');
    expect(pooled.resources[users]!.Properties.Environment.Variables.COGNITO_USER_POOL_ID).toEqual({ Ref: pool });
    expect(pooled.statementsOf(users)).toContainEqual(
      expect.objectContaining({
        Action: ['cognito-idp:AdminCreateUser', 'cognito-idp:AdminDeleteUser'],
        Resource: { 'Fn::GetAtt': [pool, 'Arn'] },
      }),
    );
    const granted = Object.keys(pooled.resources).filter((id) =>
      JSON.stringify(pooled.resources[id]!.Properties?.Environment ?? {}).includes('COGNITO_USER_POOL_ID'),
    );
    expect(granted).toEqual([users]);
  });

  it("points the API's token checks at the pool: its JWKS, issuer, the web client as audience, the user-id claim", () => {
    const variables = pooled.resources[pooled.functionId('Logbook hierarchy')]!.Properties.Environment.Variables;
    expect(JSON.stringify(variables.JWT_JWKS_URL)).toContain('/.well-known/jwks.json');
    const pool = pooled.ofType('AWS::Cognito::UserPool')[0]![0];
    expect(variables.JWT_ISSUER).toEqual({ 'Fn::GetAtt': [pool, 'ProviderURL'] });
    expect(variables.JWT_AUDIENCE).toEqual({ Ref: expect.stringMatching(/^IdentityUsersWeb/) });
    expect(variables.JWT_CLAIM_USER_ID).toBe('logbookUserId');
  });

  it('is refused with any other value', () => {
    expect(() => checkSettings({ ...defaultSettings, identity: 'okta' as never })).toThrow(/identity must be cognito/);
    expect(() => checkSettings({ ...defaultSettings, identity: 'cognito' })).not.toThrow();
  });
});
