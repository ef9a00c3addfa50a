import { randomUUID } from 'node:crypto';
import { rolePermissions, scopedPermissions } from '#shared/auth/permissions.ts';
import type { Principal } from '#shared/auth/principal.ts';

/** A partner administrator of `partnerId`, as a signed-in user would be, for the use cases a benchmark calls. */
export const partnerAdmin = (partnerId: string): Principal => ({
  actorType: 'user',
  id: randomUUID(),
  email: 'admin@bench.example',
  name: 'Bench Admin',
  role: 'partner_admin',
  scope: 'partner',
  partnerId,
  orgId: null,
  permissions: scopedPermissions('partner', rolePermissions.partner_admin),
});
