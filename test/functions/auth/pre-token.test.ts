import type { PreTokenGenerationV2TriggerEvent } from 'aws-lambda';
import { beforeAll, describe, expect, it } from 'vitest';
import { handler } from '#functions/auth/pre-token.ts';
import { signUserToken } from '#infra/local/tokens.ts';
import { useApi } from '#test/support/api.ts';
import { createTenant, type Tenant } from '#test/support/tenants.ts';

const t = useApi();
let tenant: Tenant;
beforeAll(async () => {
  tenant = await createTenant(t.api, 'Pool');
});

/** The event Cognito sends before it issues a user's tokens. */
const tokenEvent = (email: string) =>
  ({
    version: '2',
    triggerSource: 'TokenGeneration_HostedAuth',
    region: 'eu-central-1',
    userPoolId: 'eu-central-1_AbCdEf',
    userName: 'cognito-user',
    callerContext: { awsSdkVersion: '3', clientId: 'client' },
    request: { userAttributes: { email, email_verified: 'true' }, groupConfiguration: {} },
    response: { claimsAndScopeOverrideDetails: {} },
  }) as unknown as PreTokenGenerationV2TriggerEvent;

const invite = (body: Record<string, unknown>) =>
  t.api.request('POST', '/api/v1/users', { token: tenant.partnerToken, body });

describe('the Cognito pre-token-generation trigger', () => {
  it("puts the role, scope, partner and organization of the user's record into both tokens", async () => {
    const user = await invite({ email: 'viewer@pool.example', role: 'org_viewer', orgId: tenant.orgId });
    const event = (await handler(tokenEvent('Viewer@Pool.example'))) as PreTokenGenerationV2TriggerEvent;
    const claims = {
      role: 'org_viewer',
      scope: 'organization',
      partnerId: tenant.partnerId,
      orgId: tenant.orgId,
      logbookUserId: user.body.id,
    };
    expect(event.response.claimsAndScopeOverrideDetails).toEqual({
      idTokenGeneration: { claimsToAddOrOverride: claims },
      accessTokenGeneration: { claimsToAddOrOverride: claims },
    });
    // A token carrying them reads the organization, and changes nothing in it.
    const { logbookUserId, ...rest } = claims;
    const token = await signUserToken({ sub: logbookUserId, ...rest } as never);
    expect((await t.api.request('GET', `/api/v1/orgs/organizations/${tenant.orgId}`, { token })).status).toBe(200);
  });

  it('gives a partner user partner scope and no organization', async () => {
    await invite({ email: 'tech@pool.example', role: 'partner_technician' });
    const event = (await handler(tokenEvent('tech@pool.example'))) as PreTokenGenerationV2TriggerEvent;
    expect(event.response.claimsAndScopeOverrideDetails.idTokenGeneration?.claimsToAddOrOverride).toMatchObject({
      role: 'partner_technician',
      scope: 'partner',
      partnerId: tenant.partnerId,
    });
    expect(event.response.claimsAndScopeOverrideDetails.idTokenGeneration?.claimsToAddOrOverride).not.toHaveProperty(
      'orgId',
    );
  });

  it('refuses an address that is no user, or a deleted one: no token is issued', async () => {
    await expect(handler(tokenEvent('stranger@pool.example'))).rejects.toThrow(/no Logbook user/);
    const user = await invite({ email: 'gone@pool.example', role: 'org_viewer', orgId: tenant.orgId });
    await t.api.request('DELETE', `/api/v1/users/${user.body.id}`, { token: tenant.partnerToken });
    await expect(handler(tokenEvent('gone@pool.example'))).rejects.toThrow(/no Logbook user/);
  });
});
