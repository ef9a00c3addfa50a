import { auditOwnedChange } from '../audit/partner-audit.ts';
import type { AuditContext } from '../audit/writer.ts';
import type { Principal } from '../auth/principal.ts';
import type { Db, Tx } from '../db/db.ts';
import {
  auditScript,
  changeScript,
  getScript,
  insertScriptInto,
  type Library,
  scriptAuditFields,
  storedScript,
  writableLibrary,
} from './library.ts';
import {
  type Bundle,
  type ImportBundle,
  type ImportResult,
  type PreviewBundle,
  type PreviewStatus,
  type ScriptDefinition,
  scriptDefinition,
} from './schemas.ts';
import * as store from './store.ts';

interface Entry {
  index: number;
  name: string | null;
  definition?: ScriptDefinition;
  errors: { path: string; message: string }[];
  existing?: { id: string; name: string; version: number };
}

/** Each script of the bundle checked on its own, and matched by name against the target library. */
async function readBundle(db: Db, library: Library, bundle: Bundle): Promise<Entry[]> {
  const seen = new Set<string>();
  const entries: Entry[] = bundle.scripts.map((raw, index) => {
    const parsed = scriptDefinition.safeParse(raw);
    const rawName = (raw as { name?: unknown } | null)?.name;
    const name = parsed.success ? parsed.data.name : typeof rawName === 'string' ? rawName : null;
    if (!parsed.success)
      return {
        index,
        name,
        errors: parsed.error.issues.map((issue) => ({
          path: ['bundle', 'scripts', index, ...issue.path].join('.'),
          message: issue.message,
        })),
      };
    const key = parsed.data.name.toLowerCase();
    if (seen.has(key))
      return {
        index,
        name,
        errors: [{ path: `bundle.scripts.${index}.name`, message: 'This name appears twice in the bundle' }],
      };
    seen.add(key);
    return { index, name, definition: parsed.data, errors: [] };
  });
  const names = entries.flatMap((e) => (e.definition ? [e.definition.name] : []));
  const existing = new Map(
    (await store.selectScriptsByName(db, library, names)).map((s) => [s.name.toLowerCase(), s] as const),
  );
  for (const entry of entries) if (entry.definition) entry.existing = existing.get(entry.definition.name.toLowerCase());
  return entries;
}

const statusOf = (entry: Entry): PreviewStatus =>
  !entry.definition ? 'invalid' : entry.existing ? 'name-conflict' : 'new';

/** POST /scripts/bundle/preview: each script `new`, `name-conflict` or `invalid` with its reasons; nothing stored. */
export async function previewBundle(db: Db, principal: Principal, input: PreviewBundle) {
  const library = await writableLibrary(db, principal, input);
  const entries = await readBundle(db, library, input.bundle);
  const scripts = entries.map((e) => ({
    index: e.index,
    name: e.name,
    status: statusOf(e),
    existingScriptId: e.existing?.id ?? null,
    errors: e.errors,
  }));
  const count = (status: PreviewStatus) => scripts.filter((s) => s.status === status).length;
  return {
    bundleVersion: 1 as const,
    scripts,
    summary: { total: scripts.length, new: count('new'), conflicts: count('name-conflict'), invalid: count('invalid') },
  };
}

/**
 * POST /scripts/bundle/import: new scripts are created; a name conflict is skipped, imported under a free
 * name (`rename`), or made the existing script's next version (`new-version`, a no-op when nothing differs), per the
 * script's mode or the import's. Invalid scripts, and scripts whose status differs from the preview's `expected`, are
 * not applied. Running it again changes nothing more. Audited: one `script.import` summary row and a row per script
 * created or changed. Nothing is run.
 */
export function importBundle(db: Db, principal: Principal, input: ImportBundle, audit: AuditContext) {
  // One transaction: the scripts and their audit rows commit together, or none of them.
  return db.transaction((tx) => importInto(tx, principal, input, audit));
}

async function importInto(db: Tx, principal: Principal, input: ImportBundle, audit: AuditContext) {
  const library = await writableLibrary(db, principal, input);
  const entries = await readBundle(db, library, input.bundle);
  const scripts = [];
  for (const entry of entries) {
    const base = { index: entry.index, name: entry.name, scriptId: null, version: null, errors: entry.errors };
    const expected = entry.name === null ? undefined : input.expected?.[entry.name];
    if (!entry.definition) scripts.push({ ...base, result: 'invalid' as const });
    else if (expected !== undefined && expected !== statusOf(entry))
      scripts.push({ ...base, result: 'changed-since-preview' as const });
    else scripts.push({ ...base, ...(await applyEntry(db, principal, library, entry, input, audit)) });
  }
  const summary: Partial<Record<ImportResult, number>> = {};
  for (const s of scripts) summary[s.result] = (summary[s.result] ?? 0) + 1;
  const event = {
    action: 'script.import',
    resourceType: 'script_bundle',
    details: { availability: library.orgId ? 'organization' : 'partner', scripts: scripts.length, summary },
  };
  await auditOwnedChange(db, audit, library, event);
  return { scripts, summary };
}

async function applyEntry(
  db: Tx,
  principal: Principal,
  library: Library,
  entry: Entry,
  input: ImportBundle,
  audit: AuditContext,
) {
  const definition = entry.definition!;
  if (!entry.existing) return create(db, principal, library, definition, audit, 'created');
  const mode = input.modes?.[definition.name] ?? input.mode;
  if (mode === 'skip')
    return { result: 'skipped' as const, scriptId: entry.existing.id, version: entry.existing.version };
  if (mode === 'rename')
    return create(
      db,
      principal,
      library,
      { ...definition, name: await freeName(db, library, definition.name) },
      audit,
      'renamed',
    );
  const before = await storedScript(db, principal, entry.existing.id);
  const changed = await changeScript(db, before, definition, principal.id);
  const fields = scriptAuditFields(changed.script, changed.content);
  const differs =
    changed.newVersion || JSON.stringify(scriptAuditFields(before, before.content)) !== JSON.stringify(fields);
  if (differs) await auditScript(db, audit, changed.script, 'script.update', { import: true, after: fields });
  return {
    result: differs ? ('new-version' as const) : ('unchanged' as const),
    scriptId: changed.script.id,
    version: changed.script.version,
  };
}

async function create(
  db: Tx,
  principal: Principal,
  library: Library,
  definition: ScriptDefinition,
  audit: AuditContext,
  result: 'created' | 'renamed',
) {
  const created = await insertScriptInto(db, library, definition, principal.id);
  await auditScript(db, audit, created, 'script.create', {
    import: true,
    after: scriptAuditFields(created, definition.content),
  });
  return { result, scriptId: created.id, version: created.version };
}

/** `Name (2)`, `Name (3)` … the first name free in the library. */
async function freeName(db: Db, library: Library, name: string): Promise<string> {
  for (let n = 2; ; n++) {
    const candidate = `${name.slice(0, 240)} (${n})`;
    if (!(await store.scriptNameTaken(db, library, candidate))) return candidate;
  }
}

/** GET /scripts/bundle/export: the scripts' definitions, without any tenant identifier. */
export async function exportBundle(db: Db, principal: Principal, ids: string[]) {
  const scripts = [];
  for (const id of ids) {
    const script = await getScript(db, principal, id);
    scripts.push({
      name: script.name,
      description: script.description,
      language: script.language,
      osTypes: script.osTypes,
      content: script.content,
      parameters: script.parameters,
      timeoutSeconds: script.timeoutSeconds,
      runAs: script.runAs,
      exitCodeSeverityMapping: script.exitCodeSeverityMapping,
      category: script.category,
      tags: script.tags,
    });
  }
  return { bundleVersion: 1 as const, exportedAt: new Date().toISOString(), scripts };
}
