import type { z } from 'zod';
import type { Principal } from '../auth/principal.ts';
import { requirePermission } from '../auth/tenancy.ts';
import type { Db } from '../db/db.ts';
import type { Page } from '../db/page.ts';
import type { createPartner as createPartnerSchema } from './schemas.ts';
import * as store from './store.ts';

export async function createPartner(db: Db, principal: Principal, input: z.output<typeof createPartnerSchema>) {
  requirePermission(principal, 'partners:manage');
  return store.insertPartner(db, input.name);
}

export async function listPartners(db: Db, principal: Principal, query: Page & { search?: string }) {
  requirePermission(principal, 'partners:manage');
  return store.selectPartners(db, query, query);
}
