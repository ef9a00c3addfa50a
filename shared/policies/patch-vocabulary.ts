/**
 * The patch vocabulary every part of patching shares (kept with policies, whose patching items use it): the normalised severities and categories (with the vendors'
 * synonyms), the sources a scan comes from, the states a device reports and the reboot policies of a ring.
 */
export const patchSources = ['windows-update', 'macos', 'apt', 'dnf', 'third-party'] as const;
export const patchStates = ['missing', 'installed', 'failed', 'pending-reboot'] as const;
export const patchSeverities = ['critical', 'important', 'moderate', 'low', 'unspecified'] as const;
export type PatchSeverity = (typeof patchSeverities)[number];
export const patchCategories = [
  'security',
  'critical',
  'definition',
  'feature',
  'driver',
  'update-rollup',
  'service-pack',
  'tool',
  'other',
] as const;
export type PatchCategory = (typeof patchCategories)[number];
export const rebootPolicies = ['never', 'if-required', 'always'] as const;
export type RebootPolicy = (typeof rebootPolicies)[number];
export const installOutcomes = ['installed', 'failed', 'reboot-required'] as const;

/** A vendor's words, compared without case, spaces, dashes or underscores and without a trailing plural. */
const squeeze = (text: string) =>
  text
    .toLowerCase()
    .replace(/[\s_-]+/g, '')
    .replace(/(updates|patches|fixes|s)$/, (end) => (end === 's' ? '' : end));

const categorySynonyms: Record<string, PatchCategory> = {};
for (const [category, words] of Object.entries({
  security: ['security', 'securityupdates', 'securityupdate', 'securitypatch', 'securityfix', 'usn', 'dsa', 'rhsa'],
  critical: ['critical', 'criticalupdates', 'criticalupdate', 'criticalfix', 'hotfix'],
  definition: ['definition', 'definitionupdates', 'definitionupdate', 'definitions', 'signature', 'signatureupdates'],
  feature: ['feature', 'featurepacks', 'featurepack', 'featureupdates', 'featureupdate', 'upgrade', 'upgrades'],
  driver: ['driver', 'drivers', 'driverupdates', 'driverupdate'],
  'update-rollup': ['updaterollup', 'updaterollups', 'rollup', 'rollups', 'cumulativeupdate', 'cumulativeupdates'],
  'service-pack': ['servicepack', 'servicepacks'],
  tool: ['tool', 'tools'],
  other: ['other', 'update', 'updates', 'application', 'applications', 'bugfix', 'bugfixes', 'enhancement'],
}) as [PatchCategory, string[]][])
  for (const word of words) categorySynonyms[squeeze(word)] = category;

/** The normalised category of a vendor's category ("Security Updates" → security); unknown words are `other`. */
export function normaliseCategory(text: string | null | undefined): PatchCategory {
  if (!text) return 'other';
  return categorySynonyms[squeeze(text)] ?? 'other';
}

const severitySynonyms: Record<string, PatchSeverity> = {
  critical: 'critical',
  urgent: 'critical',
  important: 'important',
  high: 'important',
  moderate: 'moderate',
  medium: 'moderate',
  low: 'low',
  minor: 'low',
};

/** The normalised severity of a vendor's ("High" → important); none or unknown is `unspecified`. */
export function normaliseSeverity(text: string | null | undefined): PatchSeverity {
  return (text && severitySynonyms[text.trim().toLowerCase()]) || 'unspecified';
}
