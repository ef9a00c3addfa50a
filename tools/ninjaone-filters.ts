/**
 * `npx tsx tools/ninjaone-filters.ts searches.json [--org 12] [--locations locations.json]`: translates NinjaOne
 * device filters (the `df` syntax of NinjaOne's public API v2, docs/device-groups.md "From NinjaOne") into the body
 * of POST /api/v1/orgs/organizations/{id}/device-groups/import/preview: `{ groups: [...] }`, and lists on stderr
 * the searches it could not translate and why.
 *
 * searches.json: `[{ "id": 563, "name": "Windows servers online", "df": "class = WINDOWS_SERVER AND online" }]`.
 * --org: the NinjaOne organization id the target Logbook organization stands for (an `org` clause naming any other
 * organization makes the search untranslatable). --locations: `{ "<NinjaOne location id>": "<Logbook site id>" }`.
 *
 * A search is translated whole or not at all: dropping one clause would widen the group.
 */
import { readFileSync, realpathSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import type { Condition, DeviceFilter } from '#shared/device-groups/filter.ts';

export interface SavedSearch {
  id: number | string;
  name: string;
  df: string;
}

export interface Translation {
  groups: { externalId: string; sourceSystem: 'ninjaone'; name: string; filter: DeviceFilter }[];
  skipped: { externalId: string; name: string; reasons: string[] }[];
}

/** NinjaOne node classes of agent-managed computers, by the osType Logbook agents report. */
const classOsType: Record<string, string> = {
  WINDOWS_SERVER: 'windows',
  WINDOWS_WORKSTATION: 'windows',
  LINUX_SERVER: 'linux',
  LINUX_WORKSTATION: 'linux',
  MAC: 'macos',
  MAC_SERVER: 'macos',
};

const negative = new Set(['!=', 'neq', '<>', 'nin', 'notin', '!in']);
const equality = new Set(['=', 'eq', 'in', ...negative]);

/** `(1, 2)` or `1` as a list of values. */
const values = (text: string) =>
  text
    .replace(/^\(|\)$/g, '')
    .split(',')
    .map((value) => value.trim())
    .filter(Boolean);

/** yyyyMMdd, yyyy-MM-dd or an ISO instant (the forms NinjaOne's `created` takes) as an ISO instant. */
function instant(text: string): string | undefined {
  const compact = /^(\d{4})(\d{2})(\d{2})$/.exec(text);
  const date = compact ? `${compact[1]}-${compact[2]}-${compact[3]}` : text;
  if (/^\d{4}-\d{2}-\d{2}$/.test(date)) return Number.isNaN(Date.parse(date)) ? undefined : `${date}T00:00:00Z`;
  return Number.isNaN(Date.parse(text)) ? undefined : new Date(text).toISOString();
}

function clause(
  text: string,
  options: { org?: number; locations: Record<string, string> },
): { conditions: DeviceFilter[] } | { reason: string } {
  if (/^online$/i.test(text)) return { conditions: [{ field: 'online', op: 'equals', value: true }] };
  if (/^offline$/i.test(text)) return { conditions: [{ field: 'online', op: 'equals', value: false }] };
  if (/^group\s+\d+$/i.test(text)) return { reason: `${text}: another saved search; translate that one instead` };
  const match = /^(\w+)\s*(!=|<>|=|<|>|\b(?:eq|neq|lt|gt|in|nin|notin|before|after)\b|!in)\s*(.+)$/i.exec(text);
  if (!match) return { reason: `${text}: not a clause of the NinjaOne device filter syntax` };
  const [, rawKey, rawOp, rawValue] = match as unknown as [string, string, string, string];
  const key = rawKey.toLowerCase();
  const op = rawOp.toLowerCase();
  const list = values(rawValue);
  const negated = negative.has(op);
  const wrap = (condition: Condition): DeviceFilter => (negated ? { not: condition } : condition);
  if ((key === 'org' || key === 'organization') && equality.has(op)) {
    const inside = options.org !== undefined && list.includes(String(options.org));
    return inside !== negated
      ? { conditions: [] }
      : { reason: `${text}: names devices of other organizations; import per organization (--org)` };
  }
  if ((key === 'loc' || key === 'location') && equality.has(op)) {
    const sites = list.map((id) => options.locations[id]);
    if (sites.some((site) => !site)) return { reason: `${text}: location without a site in --locations` };
    return { conditions: [wrap({ field: 'siteId', op: 'in', value: sites })] };
  }
  if (key === 'class' && equality.has(op)) {
    const unknown = list.filter((value) => !classOsType[value.toUpperCase()]);
    if (unknown.length > 0) return { reason: `${text}: ${unknown.join(', ')} is no agent-managed computer class` };
    // Logbook knows the operating system, not the server/workstation role: both classes of one system read alike.
    const osTypes = [...new Set(list.map((value) => classOsType[value.toUpperCase()]!))];
    return { conditions: [wrap({ field: 'osType', op: 'in', value: osTypes })] };
  }
  if (key === 'status' && (op === '=' || op === 'eq') && rawValue.trim().toUpperCase() === 'APPROVED')
    return { conditions: [] };
  if (key === 'created') {
    const at = instant(rawValue.trim());
    if (!at) return { reason: `${text}: not a date NinjaOne's created takes` };
    if (op === '<' || op === 'lt' || op === 'before')
      return { conditions: [{ field: 'createdAt', op: 'before', value: at }] };
    if (op === '>' || op === 'gt' || op === 'after')
      return { conditions: [{ field: 'createdAt', op: 'after', value: at }] };
    if (op === '=' || op === 'eq') {
      const next = new Date(Date.parse(at) + 86_400_000).toISOString();
      return {
        conditions: [
          { field: 'createdAt', op: 'gte', value: at },
          { field: 'createdAt', op: 'lt', value: next },
        ],
      };
    }
  }
  return { reason: `${text}: ${key} ${op} has no counterpart in the filter language` };
}

/** Translates saved NinjaOne device filters into device-group import rows. */
export function translateNinjaOneFilters(
  searches: SavedSearch[],
  options: { org?: number; locations?: Record<string, string> } = {},
): Translation {
  const result: Translation = { groups: [], skipped: [] };
  for (const search of searches) {
    const externalId = String(search.id);
    const clauses = search.df.split(/\s+(?:AND|and)\s+|\s*&&\s*/).map((part) => part.trim());
    const conditions: DeviceFilter[] = [];
    const reasons: string[] = [];
    for (const text of clauses) {
      const translated = clause(text, { org: options.org, locations: options.locations ?? {} });
      if ('reason' in translated) reasons.push(translated.reason);
      else conditions.push(...translated.conditions);
    }
    if (reasons.length === 0 && conditions.length === 0)
      reasons.push('no condition left: the group would hold every device');
    if (reasons.length > 0) result.skipped.push({ externalId, name: search.name, reasons });
    else
      result.groups.push({
        externalId,
        sourceSystem: 'ninjaone',
        name: search.name,
        filter: conditions.length === 1 ? conditions[0]! : { all: conditions },
      });
  }
  return result;
}

// Run as a command (also from a checkout whose path has spaces or symlinks), not imported.
if (process.argv[1] && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) {
  const { values: args, positionals } = parseArgs({
    options: { org: { type: 'string' }, locations: { type: 'string' } },
    allowPositionals: true,
  });
  if (positionals.length !== 1) {
    console.error('usage: npx tsx tools/ninjaone-filters.ts searches.json [--org <id>] [--locations locations.json]');
    process.exit(2);
  }
  const searches = JSON.parse(readFileSync(positionals[0]!, 'utf8')) as SavedSearch[];
  const locations = args.locations ? (JSON.parse(readFileSync(args.locations, 'utf8')) as Record<string, string>) : {};
  const { groups, skipped } = translateNinjaOneFilters(searches, {
    org: args.org === undefined ? undefined : Number(args.org),
    locations,
  });
  for (const search of skipped)
    console.error(`skipped ${search.externalId} ${search.name}: ${search.reasons.join('; ')}`);
  console.log(JSON.stringify({ groups }, null, 2));
}
