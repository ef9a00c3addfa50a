import type { Principal } from '../auth/principal.ts';
import { requirePermission } from '../auth/tenancy.ts';
import type { Db } from '../db/db.ts';
import { NotFound, ValidationFailed } from '../errors.ts';
import { effectivePoliciesOf } from '../policies/effective.ts';
import { reachablePolicy } from '../policies/policies.ts';
import type { MetricItem } from '../policies/schemas.ts';
import { initialState, stepThrough } from './transitions.ts';

/** Devices resolved at once while finding where the item applies. */
const concurrency = 8;

async function inBatches<T, R>(list: T[], size: number, each: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < list.length; i += size) out.push(...(await Promise.all(list.slice(i, i + size).map(each))));
  return out;
}

/**
 * POST /policies/{id}/items/{itemKey}/backtest: how often a metric item would have fired and resolved on each
 * device it applies to now (by the one resolver), from the samples stored between `from` and `to`. Devices without a
 * sample of the metric in the range are not listed: nothing would have been judged there.
 */
export async function backtest(
  db: Db,
  principal: Principal,
  policyId: string,
  itemKey: string,
  body: { from: string; to: string; orgId?: string },
) {
  const policy = await reachablePolicy(db, principal, policyId);
  requirePermission(principal, 'devices:read');
  const item = policy.items.find((i) => i.key === itemKey);
  if (!item) throw NotFound('Policy item');
  if (item.type !== 'metric')
    throw ValidationFailed('Only metric items are backtested: the others are judged from checks and heartbeats', [
      { path: 'params.itemKey', message: `${itemKey} is a ${String(item.type)} item`, code: 'custom' },
    ]);
  const metric = item as unknown as MetricItem;
  const orgId = body.orgId ?? null;
  const { rows: devices } = await db.query<{ id: string; hostname: string; orgId: string }>(
    `SELECT d.id, d.hostname, d.org_id AS "orgId" FROM devices d JOIN organizations o ON o.id = d.org_id
      WHERE o.partner_id = :partnerId::uuid AND o.deleted_at IS NULL AND d.deleted_at IS NULL
        AND (:policyOrg::uuid IS NULL OR d.org_id = :policyOrg::uuid)
        AND (:orgId::uuid IS NULL OR d.org_id = :orgId::uuid)
        AND (:tenantOrgId::uuid IS NULL OR d.org_id = :tenantOrgId::uuid)
        AND EXISTS (SELECT 1 FROM device_metric_samples m
                     WHERE m.device_id = d.id AND m.metric = :metric::text
                       AND m.at > :from::timestamptz AND m.at <= :to::timestamptz)
      ORDER BY d.hostname, d.id`,
    {
      partnerId: policy.partnerId,
      policyOrg: policy.orgId,
      orgId,
      tenantOrgId: principal.scope === 'organization' ? principal.orgId : null,
      metric: metric.metric,
      from: body.from,
      to: body.to,
    },
  );
  const applies = await inBatches(devices, concurrency, async (device) => {
    const resolved = await effectivePoliciesOf(db, device.id, 'monitoring');
    return resolved?.effective.items.some((e) => e.key === itemKey && e.origin.policyId === policyId) ?? false;
  });
  const from = Date.parse(body.from);
  const to = Date.parse(body.to);
  const lookBack = new Date(from - metric.windowSeconds * 1000).toISOString();
  const results = await inBatches(
    devices.filter((_, i) => applies[i]),
    concurrency,
    async (device) => {
      const { rows } = await db.query<{ volume: string; value: number; at: number }>(
        `SELECT m.volume, m.value, (extract(epoch FROM m.at) * 1000)::float8 AS at FROM device_metric_samples m
          WHERE m.device_id = :deviceId::uuid AND m.metric = :metric::text
            AND (:volume::text IS NULL OR m.volume = :volume::text)
            AND m.at > :lookBack::timestamptz AND m.at <= :to::timestamptz
          ORDER BY m.at`,
        { deviceId: device.id, metric: metric.metric, volume: metric.volume ?? null, lookBack, to: body.to },
      );
      const samples = rows.map((r) => ({ volume: r.volume, value: r.value, at: Number(r.at) }));
      const times = samples.filter((s) => s.at >= from).map((s) => s.at);
      const { state, steps } = stepThrough(metric, initialState(new Date(from)), samples, times);
      const counted = {
        fired: steps.filter((x) => x.transition === 'fire').length,
        resolved: steps.filter((x) => x.transition === 'resolve').length,
        firingAtEnd: state.state === 'firing',
      };
      return {
        deviceId: device.id,
        hostname: device.hostname,
        samples: samples.filter((s) => s.at >= from).length,
        ...counted,
      };
    },
  );
  return {
    policyId,
    itemKey,
    policyVersion: policy.version,
    from: new Date(from),
    to: new Date(to),
    devices: results,
    totals: {
      devices: results.length,
      fired: results.reduce((sum, r) => sum + r.fired, 0),
      resolved: results.reduce((sum, r) => sum + r.resolved, 0),
    },
  };
}
