import { randomUUID } from 'node:crypto';
import { signUserToken } from '#infra/local/tokens.ts';
import type { UserClaims } from '#shared/auth/jwt.ts';
import type { Role } from '#shared/auth/permissions.ts';
import type { Api } from './api.ts';

export const platformAdmin = (): Promise<string> =>
  signUserToken({
    sub: randomUUID(),
    email: 'root@platform.test',
    name: 'Root',
    role: 'platform_admin',
    scope: 'platform',
  });

export const partnerUser = (
  partnerId: string,
  role: Extract<Role, `partner_${string}`> = 'partner_admin',
  extra: Partial<UserClaims> = {},
) =>
  signUserToken({
    sub: randomUUID(),
    email: `${role}@partner.test`,
    name: 'Partner User',
    role,
    scope: 'partner',
    partnerId,
    ...extra,
  });

export const orgUser = (
  partnerId: string,
  orgId: string,
  role: Extract<Role, `org_${string}`> = 'org_admin',
  extra: Partial<UserClaims> = {},
) =>
  // org_service is an API key role: a user token naming it is built here only to show that it is refused.
  signUserToken({
    sub: randomUUID(),
    email: `${role}@org.test`,
    name: 'Org User',
    role: role as UserClaims['role'],
    scope: 'organization',
    partnerId,
    orgId,
    ...extra,
  });

export interface Tenant {
  partnerId: string;
  orgId: string;
  siteId: string;
  partnerToken: string;
  orgToken: string;
}

/** A partner with one organization (and its first site), created through the API, with admin tokens for both. */
export async function createTenant(api: Api, name = 'Acme'): Promise<Tenant> {
  const root = await platformAdmin();
  const partner = await api.request('POST', '/api/v1/partners', { token: root, body: { name: `${name} MSP` } });
  if (partner.status !== 201) throw new Error(`partner: ${partner.status} ${JSON.stringify(partner.body)}`);
  const partnerToken = await partnerUser(partner.body.id);
  const org = await api.request('POST', '/api/v1/orgs/organizations', {
    token: partnerToken,
    body: { name: `${name} Corp` },
  });
  if (org.status !== 201) throw new Error(`organization: ${org.status} ${JSON.stringify(org.body)}`);
  return {
    partnerId: partner.body.id,
    orgId: org.body.id,
    siteId: org.body.site.id,
    partnerToken,
    orgToken: await orgUser(partner.body.id, org.body.id),
  };
}

/** Enrolls an agent into the tenant's organization (or a site) through the API. */
export async function enrollDevice(api: Api, tenant: Tenant, hostname = 'host-1', siteId?: string) {
  const key = await api.request('POST', `/api/v1/orgs/organizations/${tenant.orgId}/enrollment-keys`, {
    token: tenant.orgToken,
    body: siteId ? { siteId } : {},
  });
  if (key.status !== 201) throw new Error(`enrollment key: ${key.status} ${JSON.stringify(key.body)}`);
  const enrolled = await api.request('POST', '/api/v1/agents/enroll', {
    body: { enrollmentKey: key.body.key, hostname },
  });
  if (enrolled.status !== 201) throw new Error(`enroll: ${enrolled.status} ${JSON.stringify(enrolled.body)}`);
  return enrolled.body as { agentId: string; deviceId: string; token: string };
}
