import { randomUUID } from 'node:crypto';
import { rolePermissions, scopedPermissions } from '#shared/auth/permissions.ts';
import type { Principal } from '#shared/auth/principal.ts';

/** A platform administrator as a signed-in user would be, for tests that call a use case without the HTTP layer. */
export const platformAdminPrincipal = (email = 'root@platform.test', name = 'Root'): Principal => ({
  actorType: 'user',
  id: randomUUID(),
  email,
  name,
  role: 'platform_admin',
  scope: 'platform',
  partnerId: null,
  orgId: null,
  permissions: scopedPermissions('platform', rolePermissions.platform_admin),
});
