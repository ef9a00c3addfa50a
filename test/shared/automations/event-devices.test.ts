import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selectDevicesById } from '#shared/automations/store.ts';
import type { Db, Params, Row } from '#shared/db/db.ts';
import { insertOrganizationWithSite } from '#shared/hierarchy/organizations.ts';
import { insertPartner } from '#shared/hierarchy/store.ts';
import { createTestDatabase, type TestDatabase } from '#test/support/database.ts';

type PlanNode = {
  'Relation Name'?: string;
  'Actual Rows': number;
  'Actual Loops': number;
  'Rows Removed by Filter'?: number;
  Plans?: PlanNode[];
};

/** Runs each statement under EXPLAIN ANALYZE instead and keeps its plan. */
function explaining(db: Db, plans: PlanNode[]): Db {
  return {
    ...db,
    query: async <T extends Row>(sql: string, params?: Params) => {
      const { rows } = await db.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
        `EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`,
        params,
      );
      plans.push(rows[0]!['QUERY PLAN'][0].Plan);
      return { rows: [] as T[], rowCount: 0 };
    },
  };
}

/** The device rows a plan looked at: those its scans of `devices` returned or filtered out. */
function devicesExamined(node: PlanNode): number {
  const own =
    node['Relation Name'] === 'devices'
      ? (node['Actual Rows'] + (node['Rows Removed by Filter'] ?? 0)) * node['Actual Loops']
      : 0;
  return own + (node.Plans ?? []).reduce((sum, child) => sum + devicesExamined(child), 0);
}

let db: TestDatabase;
let deviceId: string;
beforeAll(async () => {
  db = await createTestDatabase();
  // The devices table's statistics taken while it was empty and not taken again: a fleet enrolled since.
  await db.admin.query('ALTER TABLE devices SET (autovacuum_enabled = off)');
  await db.admin.query('ANALYZE devices');
  const partner = (await insertPartner(db.admin, 'Fleet MSP')) as { id: string };
  for (const name of ['Fleet A', 'Fleet B']) {
    const org = await db.admin.transaction((tx) =>
      insertOrganizationWithSite(tx, { partnerId: partner.id, name }, { name: 'HQ' }),
    );
    const { rows } = await db.admin.query<{ id: string }>(
      `INSERT INTO devices (org_id, site_id, hostname)
       SELECT :orgId::uuid, :siteId::uuid, 'host-' || n FROM generate_series(1, 1000) n RETURNING id`,
      { orgId: org.id, siteId: org.site.id },
    );
    deviceId = rows[0]!.id;
  }
});
afterAll(() => db.close());

describe("a device event's devices", () => {
  it('are read by their ids, not by scanning the fleet, while the statistics still say the table is empty', async () => {
    const [device] = await selectDevicesById(db.admin, [deviceId]);
    expect(device).toMatchObject({ id: deviceId, hostname: 'host-1', timezone: 'UTC' });

    const plans: PlanNode[] = [];
    await selectDevicesById(explaining(db.admin, plans), [deviceId]);
    expect(devicesExamined(plans[0]!)).toBe(1);
  });

  it('are read by their ids too by the plan the statement keeps once prepared on a connection', async () => {
    const plan = await db.admin.transaction(async (tx) => {
      for (let run = 0; run < 6; run++) await selectDevicesById(tx, [deviceId]);
      await tx.query('SET LOCAL plan_cache_mode = force_generic_plan');
      const { rows } = await tx.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
        // EXECUTE takes no bound parameter: the id, a uuid read back from the database, is written in.
        `EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE logbook_automations_devices_by_id('["${deviceId}"]')`,
      );
      return rows[0]!['QUERY PLAN'][0].Plan;
    });
    expect(devicesExamined(plan)).toBe(1);
  });
});
