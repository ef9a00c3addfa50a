import { appDb } from '#shared/db/client.ts';
import { route } from '#shared/http/route.ts';
import { commitTreeImport, previewTreeImport } from '#shared/tenancy-import/import.ts';
import * as tree from '#shared/tenancy-import/schemas.ts';

/** The routes of tenancy-import, each with the one domain call answering it. */
export const routes = {
  'POST /api/v1/orgs/import/preview': route(
    {
      operationId: 'hierarchyTreeImportPreview',
      group: 'hierarchy',
      auth: 'user',
      tag: 'hierarchy',
      summary:
        'Preview a tenancy-tree import (partner users, orgs:write): up to 1,000 organization/site rows annotated create, matched, name-match (held), conflict or invalid; nothing stored',
      body: tree.treeImport,
      maxBodyBytes: 2 * 1024 * 1024,
      response: tree.treeImportReply,
      errors: [400, 401, 403, 413],
    },
    ({ caller, body }) => previewTreeImport(appDb(), caller, body),
  ),
  'POST /api/v1/orgs/import': route(
    {
      operationId: 'hierarchyTreeImportCommit',
      group: 'hierarchy',
      auth: 'user',
      tag: 'hierarchy',
      summary:
        'Commit a tenancy-tree import: re-derives every row, refuses rows changed since preview, applies name-matches only when acknowledged; audited per organization and site created and with a summary (organization.import)',
      body: tree.treeImport,
      maxBodyBytes: 2 * 1024 * 1024,
      response: tree.treeImportReply,
      errors: [400, 401, 403, 413],
    },
    ({ caller, body, audit }) => commitTreeImport(appDb(), caller, body, audit),
  ),
} as const;
