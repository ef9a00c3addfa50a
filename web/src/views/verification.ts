import type { AuditVerification } from '../../../shared/audit/schemas.ts';
import type { ApiClient } from '../api.ts';
import { describeError } from '../api.ts';
import { h } from '../element.ts';
import type { Row } from '../entries.ts';
import { count } from '../paging.ts';

export type OrgVerification = { orgId: string; from: string; to: string } & (
  | { verification: AuditVerification }
  | { error: string }
);

/**
 * Verifies the hash chain over the rows shown (GET /audit-logs/verify, from the oldest to the newest shown
 * timestamp), once per organization among them: the verifier checks every row in that window and the links
 * at its edges, so a row altered, inserted or deleted among those shown is found.
 */
export async function verifyShownRows(api: ApiClient, rows: Row[], signal: AbortSignal): Promise<OrgVerification[]> {
  const ranges = new Map<string, { from: string; to: string }>();
  for (const row of rows) {
    const range = ranges.get(row.orgId);
    // Timestamps are fixed-width UTC (YYYY-MM-DDTHH:MM:SS.ffffffZ), so text order is time order.
    if (!range) ranges.set(row.orgId, { from: row.timestamp, to: row.timestamp });
    else {
      if (row.timestamp < range.from) range.from = row.timestamp;
      if (row.timestamp > range.to) range.to = row.timestamp;
    }
  }
  return Promise.all(
    [...ranges].map(async ([orgId, range]): Promise<OrgVerification> => {
      try {
        const verification = await api.get<AuditVerification>(
          '/audit-logs/verify',
          new URLSearchParams({ orgId, ...range }),
          signal,
        );
        return { orgId, ...range, verification };
      } catch (error) {
        if (signal.aborted) throw error;
        return { orgId, ...range, error: describeError(error, api.baseUrl) };
      }
    }),
  );
}

const breakWords = {
  altered: 'a row was altered',
  missing: 'a row is missing',
  inserted: 'a row was inserted',
  link: 'a link is broken',
  checkpoint: 'the retention cut it starts after is not a signed one',
  anchor: 'it no longer holds what its signed anchor recorded',
  'organization-missing': 'the whole chain is gone, with no record that the organization was deleted',
} as const;

export function verificationStatus(
  results: OrgVerification[],
  orgName: (orgId: string) => string,
  many: boolean,
  onShowEntry: (id: string) => void,
) {
  const where = (orgId: string) => (many ? ` in ${orgName(orgId)}` : '');
  const failed = results.filter((result) => 'verification' in result && !result.verification.ok);
  const unverified = results.filter(
    (result): result is Extract<OrgVerification, { error: string }> => 'error' in result,
  );
  if (failed.length > 0) {
    return h(
      'p',
      { class: 'chain chain-broken' },
      h('span', { 'aria-hidden': 'true' }, '✕ '),
      failed.flatMap((result) => {
        const verification = 'verification' in result ? result.verification : undefined;
        const broken = verification?.firstBreak;
        const text = broken
          ? `Chain broken${where(result.orgId)} at seq ${broken.seq}: ${breakWords[broken.kind]}.`
          : `Chain not intact${where(result.orgId)}: the signed anchor does not match.`;
        return [
          `${text} `,
          broken?.id
            ? h('button', { type: 'button', class: 'link', onclick: () => onShowEntry(broken.id!) }, 'Show that entry')
            : null,
          ' ',
        ];
      }),
    );
  }
  if (unverified.length > 0) {
    return h(
      'p',
      { class: 'chain chain-unknown' },
      h('span', { 'aria-hidden': 'true' }, '? '),
      `Chain not verified${where(unverified[0]!.orgId)}: ${unverified[0]!.error}`,
    );
  }
  const checked = results.reduce(
    (sum, result) => sum + ('verification' in result ? result.verification.checked : 0),
    0,
  );
  const orgs = many && results.length > 1 ? ` in ${results.length} organizations` : '';
  return h(
    'p',
    { class: 'chain chain-ok' },
    h('span', { 'aria-hidden': 'true' }, '✓ '),
    `Chain intact for the rows shown${orgs}: ${count(checked)} rows rechecked against their checksums.`,
  );
}
