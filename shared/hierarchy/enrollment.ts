import type { z } from 'zod';
import { type AuditContext, auditChange } from '../audit/writer.ts';
import { sealSecret } from '../auth/key-seal.ts';
import type { Principal } from '../auth/principal.ts';
import { reachableOrganization } from '../auth/reachable-organization.ts';
import { hashSecret, newSecret, sameSecret, secretPrefixes, shownPart } from '../auth/secrets.ts';
import type { Db } from '../db/db.ts';
import type { Page } from '../db/page.ts';
import { NotFound, Unauthenticated } from '../errors.ts';
import { tellDeviceEvent } from '../queue/device-events.ts';
import { deviceResource } from './devices.ts';
import type { createEnrollmentKey as createSchema, enroll as enrollSchema } from './schemas.ts';
import { reportedSerial } from './serial-number.ts';
import { holdLiveSite } from './sites.ts';
import * as store from './store.ts';

/** Audited as enrollment_key.create (its name, site, expiry, usage limit and shown prefix; never the key). */
export async function createEnrollmentKey(
  db: Db,
  principal: Principal,
  orgId: string,
  input: z.output<typeof createSchema>,
  audit: AuditContext,
) {
  await reachableOrganization(db, principal, orgId, 'enrollment:manage');
  const key = newSecret(secretPrefixes.enrollmentKey);
  const created = await db.transaction(async (tx) => {
    // A site's keys are revoked with it: the site must not be deleted between this check and the insert.
    if (input.siteId) await holdLiveSite(tx, orgId, input.siteId);
    const row = await store.insertEnrollmentKey(tx, {
      orgId,
      siteId: input.siteId ?? null,
      name: input.name ?? null,
      keyHash: hashSecret(key),
      keyPrefix: shownPart(key),
      expiresAt: input.expiresAt ?? null,
      createdBy: principal.id,
      maxUsage: input.maxUsage,
      keySealed: sealSecret(key),
    });
    await auditChange(tx, audit, {
      orgId,
      action: 'enrollment_key.create',
      resourceType: 'enrollment_key',
      resourceId: row.id,
      resourceName: row.name ?? row.keyPrefix,
      details: {
        after: {
          name: row.name,
          siteId: row.siteId,
          keyPrefix: row.keyPrefix,
          expiresAt: row.expiresAt,
          maxUsage: row.maxUsage,
        },
      },
    });
    return row;
  });
  return { ...created, key };
}

export async function listEnrollmentKeys(db: Db, principal: Principal, orgId: string, page: Page) {
  await reachableOrganization(db, principal, orgId, 'enrollment:manage');
  return store.selectEnrollmentKeys(db, orgId, page);
}

/** Audited as enrollment_key.revoke when it revokes the key (a repeat changes nothing and writes nothing). */
export async function revokeEnrollmentKey(
  db: Db,
  principal: Principal,
  orgId: string,
  keyId: string,
  audit: AuditContext,
) {
  await reachableOrganization(db, principal, orgId, 'enrollment:manage');
  await db.transaction(async (tx) => {
    const revoked = await store.updateEnrollmentKeyRevoked(tx, orgId, keyId);
    if (!revoked) throw NotFound('Enrollment key');
    if (revoked.revokedNow)
      await auditChange(tx, audit, {
        orgId,
        action: 'enrollment_key.revoke',
        resourceType: 'enrollment_key',
        resourceId: keyId,
        resourceName: revoked.name ?? revoked.keyPrefix,
        details: { keyPrefix: revoked.keyPrefix },
      });
  });
}

/**
 * Enrolls an agent: a valid, unexpired, unrevoked enrollment key
 * and, when AGENT_ENROLLMENT_SECRET is configured, that secret. Creates the device in
 * the key's site (or the organization's first site) and returns the agent's token once.
 * The key's organization is locked FOR SHARE first, as every writer relying on a live
 * site does, so no site deletion passes between choosing the site and creating the device.
 */
export async function enrollAgent(db: Db, input: z.output<typeof enrollSchema>, audit: AuditContext) {
  const secret = process.env.AGENT_ENROLLMENT_SECRET;
  if (secret && !sameSecret(input.enrollmentSecret ?? '', secret)) throw Unauthenticated('Invalid enrollment secret');
  const token = newSecret(secretPrefixes.agentToken);
  const keyHash = hashSecret(input.enrollmentKey);
  const enrolled = await db.transaction(async (tx) => {
    const key =
      (await store.lockOrganizationOfEnrollmentKey(tx, keyHash)) &&
      (await store.selectUsableEnrollmentKey(tx, keyHash));
    if (!key) throw Unauthenticated('Invalid, expired or revoked enrollment key');
    // A key enrolls at most maxUsage devices.
    if (!(await store.claimEnrollmentKeyUse(tx, key.keyId)))
      throw Unauthenticated(
        'Enrollment key has reached its usage limit (maxUsage); create a new key or one with a higher maxUsage',
      );
    const device = await store.insertDevice(tx, {
      orgId: key.orgId,
      siteId: key.siteId,
      hostname: input.hostname,
      serialNumber: reportedSerial(input.serialNumber),
      osType: input.osType,
      osVersion: input.osVersion,
      agentVersion: input.agentVersion,
      role: input.role,
    });
    const agent = await store.insertAgent(tx, device!.id, hashSecret(token));
    // The new agent is the actor: it enrolled with the key, no user was involved.
    await auditChange(
      tx,
      {
        ...audit,
        caller: { actorType: 'agent', agentId: agent!.id, deviceId: device!.id, orgId: key.orgId },
        actorName: input.hostname,
      },
      {
        orgId: key.orgId,
        action: 'device.create',
        ...deviceResource({ id: device!.id, hostname: input.hostname }),
        details: {
          enrollmentKeyId: key.keyId,
          siteId: key.siteId,
          osType: input.osType ?? null,
          agentVersion: input.agentVersion ?? null,
        },
      },
    );
    return { agentId: agent!.id, deviceId: device!.id, siteId: key.siteId };
  });
  await tellDeviceEvent({
    event: 'device.enrolled',
    eventId: `enrolled:${enrolled.deviceId}`,
    deviceId: enrolled.deviceId,
  });
  return { agentId: enrolled.agentId, deviceId: enrolled.deviceId, siteId: enrolled.siteId, token };
}
