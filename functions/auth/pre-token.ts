/**
 * The Cognito pre-token-generation trigger (V2) of the stack's own user pool (`identity: "cognito"`): puts the
 * user's role, scope, partner and organization into the ID and access tokens from Logbook's user records
 * (POST /users); an address that is no live Logbook user is refused, and Cognito issues no token.
 */
import type { PreTokenGenerationV2TriggerEvent } from 'aws-lambda';
import { userTokenClaims } from '#shared/auth/token-claims.ts';
import { appDb } from '#shared/db/client.ts';
import { observedHandler } from '#shared/observability/handler.ts';

export const handler = observedHandler(async (event: PreTokenGenerationV2TriggerEvent) => {
  const email = event.request.userAttributes.email ?? '';
  const claims = await userTokenClaims(appDb(), email);
  if (!claims) throw new Error('This address is no Logbook user: ask your administrator to invite you (POST /users)');
  event.response = {
    claimsAndScopeOverrideDetails: {
      idTokenGeneration: { claimsToAddOrOverride: claims },
      accessTokenGeneration: { claimsToAddOrOverride: claims },
    },
  };
  return event;
});
