/**
 * The sign-in logins of the stack's own Cognito user pool (`identity: "cognito"`, COGNITO_USER_POOL_ID set on the
 * users' functions): a user invited through POST /users gets a login — Cognito's AdminCreateUser, which mails the
 * invitation with a temporary password, the address marked verified since an administrator vouched for it — and a
 * deleted user loses it (AdminDeleteUser), so the address can be invited again later. Without the setting (an identity
 * provider of your own, or locally), Logbook's user records are all there is and nothing is called.
 *
 * Each call runs inside the transaction of the record's change, before its commit: a pool that refuses or does not
 * answer fails the request (503) and the record is rolled back with its audit row. Both calls are idempotent, so a
 * retry after a commit that failed once the login was made finds the login there (UsernameExistsException) or gone
 * (UserNotFoundException) and goes on.
 */
import type { CognitoIdentityProviderClient } from '@aws-sdk/client-cognito-identity-provider';
import { DomainError } from '../errors.ts';
import { logger } from '../logger.ts';

type Sdk = typeof import('@aws-sdk/client-cognito-identity-provider');
let sdk: Promise<Sdk> | undefined;
let client: CognitoIdentityProviderClient | undefined;

/** The user pool whose logins follow the user records, if the stack has one. */
const userPoolId = () => process.env.COGNITO_USER_POOL_ID || undefined;

async function cognito(): Promise<{ sdk: Sdk; client: CognitoIdentityProviderClient }> {
  sdk ??= import('@aws-sdk/client-cognito-identity-provider');
  const loaded = await sdk;
  // The endpoint comes from the SDK's own settings (AWS_ENDPOINT_URL_COGNITO_IDENTITY_PROVIDER points it elsewhere).
  client ??= new loaded.CognitoIdentityProviderClient({});
  return { sdk: loaded, client };
}

const errorName = (error: unknown) => (error instanceof Error ? error.name : '');

function unavailable(what: string, error: unknown): DomainError {
  logger.error(`[users] The user pool refused or did not answer: ${what}`, {
    error: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
  });
  return new DomainError('UNAVAILABLE', `The sign-in directory did not ${what}; nothing was changed, retry shortly`);
}

/** Creates the login of an invited user (Cognito mails the invitation); an existing login is kept as it is. */
export async function inviteLogin(user: { email: string; name: string | null }): Promise<void> {
  const pool = userPoolId();
  if (!pool) return;
  const { sdk: loaded, client: pools } = await cognito();
  try {
    await pools.send(
      new loaded.AdminCreateUserCommand({
        UserPoolId: pool,
        Username: user.email,
        UserAttributes: [
          { Name: 'email', Value: user.email },
          { Name: 'email_verified', Value: 'true' },
          ...(user.name ? [{ Name: 'name', Value: user.name }] : []),
        ],
        DesiredDeliveryMediums: ['EMAIL'],
      }),
    );
  } catch (error) {
    if (errorName(error) === 'UsernameExistsException') return;
    throw unavailable('create the login', error);
  }
}

/** Deletes the login of a deleted user; a login already gone is fine. */
export async function removeLogin(email: string): Promise<void> {
  const pool = userPoolId();
  if (!pool) return;
  const { sdk: loaded, client: pools } = await cognito();
  try {
    await pools.send(new loaded.AdminDeleteUserCommand({ UserPoolId: pool, Username: email }));
  } catch (error) {
    if (errorName(error) === 'UserNotFoundException') return;
    throw unavailable('delete the login', error);
  }
}
