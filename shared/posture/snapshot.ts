import type { z } from 'zod';
import { deviceOfAgent } from '../agents/log-access.ts';
import { selectDeviceNames } from '../agents/store.ts';
import { type AuditContext, auditChange } from '../audit/writer.ts';
import type { AgentPrincipal } from '../auth/principal.ts';
import type { Db } from '../db/db.ts';
import { deviceResource } from '../hierarchy/devices.ts';
import { tellDeviceEvent } from '../queue/device-events.ts';
import { catalogVersion, type PostureCategory, postureCatalog, postureCategories } from './catalog.ts';
import type { postureSnapshot } from './schemas.ts';
import { type DetectionRow, lockStoredSnapshot, replaceSnapshot } from './store.ts';

/** GET /agents/{id}/posture-catalog: the detection rules, for the calling agent only. */
export async function postureCatalogFor(db: Db, caller: AgentPrincipal, agentId: string) {
  await deviceOfAgent(db, caller, agentId);
  return {
    version: catalogVersion,
    categories: [...postureCategories],
    products: postureCatalog.map((p) => ({ ...p })),
  };
}

/** `category/product status` per detection, sorted: how two snapshots are compared and shown in the trail. */
const summary = (rows: readonly DetectionRow[]) => rows.map((r) => `${r.category}/${r.product} ${r.status}`).sort();

/**
 * PUT /agents/{id}/management-posture: the device's latest snapshot replaces the one stored, unless the stored
 * one is newer (a late upload never overwrites a current scan). Scans are telemetry and write no audit row
 * (telemetry must not drown the trail), except device.posture.changed when what manages the device changed, with before and after.
 */
export async function uploadPosture(
  db: Db,
  caller: AgentPrincipal,
  agentId: string,
  snapshot: z.output<typeof postureSnapshot>,
  audit: AuditContext,
) {
  const device = await deviceOfAgent(db, caller, agentId);
  const detections: DetectionRow[] = Object.entries(snapshot.categories).flatMap(([category, list]) =>
    (list ?? []).map((d) => ({
      category: category as PostureCategory,
      product: d.name,
      version: d.version ?? null,
      status: d.status,
    })),
  );
  const result = await db.transaction(async (tx) => {
    const stored = await lockStoredSnapshot(tx, device.id, device.orgId);
    const newer = stored?.collectedAt && stored.collectedAt > new Date(snapshot.collectedAt);
    if (!stored || newer) return { applied: false, collectedAt: snapshot.collectedAt };
    const before = stored.collectedAt && {
      collectedAt: stored.collectedAt.toISOString(),
      detections: stored.detections,
    };
    await replaceSnapshot(tx, { id: device.id, orgId: device.orgId, partnerId: stored.partnerId }, before, {
      collectedAt: snapshot.collectedAt,
      detections,
    });
    const [was, now] = [summary(stored.detections), summary(detections)];
    if (JSON.stringify(was) !== JSON.stringify(now)) {
      const names = await selectDeviceNames(tx, device.id);
      await auditChange(
        tx,
        { ...audit, actorName: names?.hostname },
        {
          orgId: device.orgId,
          action: 'device.posture.changed',
          ...deviceResource({ id: device.id, hostname: names?.hostname ?? device.id, displayName: names?.displayName }),
          details: { before: { detections: was }, after: { detections: now }, collectedAt: snapshot.collectedAt },
        },
      );
    }
    const known = new Set(stored.detections.map((d) => `${d.category}:${d.product}`));
    return {
      applied: true,
      collectedAt: snapshot.collectedAt,
      found: [...new Set(detections.filter((d) => !known.has(`${d.category}:${d.product}`)).map((d) => d.category))],
    };
  });
  // Automations hear of each category with a product detected that the stored snapshot did not have.
  for (const category of result.found ?? [])
    await tellDeviceEvent({
      event: 'posture.detected',
      eventId: `posture:${device.id}:${result.collectedAt}:${category}`,
      deviceId: device.id,
      data: { category },
    });
  return {
    deviceId: device.id,
    collectedAt: new Date(result.collectedAt).toISOString(),
    detections: detections.length,
    applied: result.applied,
  };
}
