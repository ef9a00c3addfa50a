import type { Principal } from '../auth/principal.ts';
import { assertReachable, requirePermission } from '../auth/tenancy.ts';
import type { Db } from '../db/db.ts';
import type { ListTicketsQuery } from './schemas.ts';
import * as store from './store.ts';

/** The platform's own minimal tickets: created from an alert, closed when it is resolved. */
export function listTickets(db: Db, principal: Principal, query: ListTicketsQuery) {
  requirePermission(principal, 'alerts:read');
  return store.selectTickets(db, principal, query, query);
}

export async function getTicket(db: Db, principal: Principal, id: string) {
  requirePermission(principal, 'alerts:read');
  return assertReachable(await store.selectTicket(db, principal, id), 'Ticket');
}
