/**
 * `npm run audit:verify`: verifies an organization's audit chain in the database, or an exported range
 * offline. Exit status 0: intact; 1: a break, printed with its seq, id and kind; 2: a usage error,
 * or nothing could be verified (database unreachable, file unreadable or not a contiguous range).
 */
import { createPublicKey, type KeyObject } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { gunzipSync } from 'node:zlib';
import { z } from 'zod';
import { localAnchorKeyFile } from '#infra/local/anchor-key-file.ts';
import { embeddedUrl } from '#infra/local/database.ts';
import { auditAnchor } from '#shared/audit/anchor-schemas.ts';
import { configuredAnchorPublicKey } from '#shared/audit/anchor-signing.ts';
import type { Anchor } from '#shared/audit/anchor-store.ts';
import { witnessBreakMeaning } from '#shared/audit/anchor-witness.ts';
import { describeChainBreak } from '#shared/audit/chain-break.ts';
import { exportColumns, maxExportRows } from '#shared/audit/export.ts';
import type { AuditRow } from '#shared/audit/row.ts';
import { auditChainEvidence, auditVerifyQuery } from '#shared/audit/schemas.ts';
import type { ChainLink } from '#shared/audit/store.ts';
import { verifyChain, verifyRowsOffline } from '#shared/audit/verify.ts';
import {
  type WitnessedAnchor,
  witnessContradiction,
  witnessedAnchors,
  witnessStoreAt,
} from '#shared/audit-streams/witness.ts';
import { createPgDb } from '#shared/db/pg.ts';
import { count, location, progressLine, reason, rows, runCommand, usageError } from './cli.ts';

const usage = `Usage:
  npm run audit:verify -- --org <orgId> [--from <instant>] [--to <instant>] [--progress]
  npm run audit:verify -- --org <orgId> --anchor <anchors.json> [--public-key <key.pem>]
  npm run audit:verify -- --org <orgId> --witness <dir | s3://bucket/prefix> [--public-key <key.pem>]
  npm run audit:verify -- --file <export.json> [--public-key <key.pem>]

  --org <orgId>     verify the organization's chain in the database: DATABASE_URL if set, else the
                    embedded database of a running \`npm start\` (127.0.0.1, port EMBEDDED_PG_PORT, else .data/postgres.port)
  --from, --to      only the rows timestamped in this range, and the links around them (ISO 8601; without an
                    offset UTC; a date alone is from the start / to the end of that UTC day)
  --progress        show the progress line even when stderr is not a terminal
  --anchor <path>   also prove the chain still holds what a signed anchor recorded: a reply of
                    GET /api/v1/audit-logs/anchors (its newest anchor of --org is used) or one anchor, kept
                    outside the database; catches a chain rewritten wholesale, which verifies on its own
  --witness <location>  also compare the chain with every anchor published to the outside witness: the
                    directory of \`npm start\` (.data/witness) or the Object Lock bucket (s3://bucket/prefix);
                    reports a wiped organization (kind organization-wiped), a head below the newest witnessed
                    anchor (head-rolled-back), its rows gone under a head that claims them (tail-truncated), a
                    row at a witnessed position with another checksum (head-not-extending), or a witnessed
                    anchor not signed by the key (witness-signature)
  --public-key <path>  the Ed25519 public key (SPKI PEM) that signs anchors and retention checkpoints; default:
                    for --anchor the publicKey of the anchors reply, for --file the export's publicKey, else
                    AUDIT_ANCHOR_PUBLIC_KEY, AUDIT_ANCHOR_PRIVATE_KEY or the key file of \`npm start\` (.data/anchor-key.pem)

Every form also checks the signed evidence: the retention checkpoint the chain starts after must be
signed by the retention worker over rows older than its policy allowed (kind checkpoint); the newest signed anchor
must still hold, and an organization recorded as anchored must still have anchors (kind anchor).
  --file <path>     verify a JSON export (GET /api/v1/audit-logs/export?format=json) offline, without the database

Both print each organization's chain head (seq and checksum). Checksums are unkeyed SHA-256: whoever can
rewrite the database, or the file, can recompute them all. Keep heads outside the database and compare:
a file's recorded head with the live one (--org prints it), a live head with one kept earlier.

Exit status: 0 chain intact, 1 break found, 2 usage error or not verifiable.`;

/** Nothing could be verified: exit status 2. */
class Unverifiable extends Error {}

const describeLink = (link: ChainLink) => `seq ${link.seq}, checksum ${link.checksum}`;

/** "rows checked / total" while a range longer than one page is verified (verifyChain reports after each page). */
function verifyProgress(label: string, enabled: boolean) {
  const line = progressLine(enabled);
  return {
    update({ checked, total }: { checked: number; total: number }) {
      const done = checked >= total;
      if (!line.shown && done) return;
      line.show(
        `${label}: ${count(checked)} / ${rows(total)} (${Math.floor((checked / Math.max(total, 1)) * 100)}%)`,
        done,
      );
    },
    end: line.end,
  };
}

/** A signed anchor kept outside the database, and the key its signature is checked with (none: not checked). */
interface KeptAnchor {
  anchor: Anchor;
  publicKey?: KeyObject;
  /** Where the key came from, for the report. */
  keyFrom?: string;
}

const anchorsReply = z.object({ publicKey: z.string().nullable().optional(), data: z.array(auditAnchor) });

/** The newest anchor of `orgId` in a saved anchors reply (or a single anchor), with the key to check it. */
function readAnchor(path: string, orgId: string, publicKeyPath: string | undefined): KeptAnchor {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new Unverifiable(`cannot read the anchor file ${path}: ${reason(error)}`);
  }
  const reply = anchorsReply.safeParse(json);
  const single = auditAnchor.safeParse(json);
  if (!reply.success && !single.success)
    throw new Unverifiable(`${path} is neither a reply of GET /api/v1/audit-logs/anchors nor one anchor of it`);
  const anchors = reply.success ? reply.data.data : [single.data!];
  const anchor = anchors.filter((a) => a.orgId === orgId).sort((a, b) => b.seq - a.seq)[0];
  if (!anchor) throw new Unverifiable(`${path} holds no anchor of organization ${orgId}`);
  const pem = publicKeyPath === undefined ? (reply.success ? reply.data.publicKey : undefined) : readKey(publicKeyPath);
  if (!pem) return { anchor };
  let publicKey: KeyObject;
  try {
    publicKey = createPublicKey(pem);
  } catch (error) {
    throw new Unverifiable(`not a public key (${publicKeyPath ?? `the publicKey of ${path}`}): ${reason(error)}`);
  }
  if (publicKey.asymmetricKeyType !== 'ed25519')
    throw new Unverifiable(`anchors are signed with Ed25519, not ${publicKey.asymmetricKeyType}`);
  return { anchor, publicKey, keyFrom: publicKeyPath ?? `the publicKey of ${path}` };
}

function readKey(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    throw new Unverifiable(`cannot read the public key ${path}: ${reason(error)}`);
  }
}

/** A key the signatures of checkpoints and anchors are checked with, and where it came from. */
type EvidenceKey = { key: KeyObject; from: string } | undefined;

/** Ed25519 public key from a PEM; Unverifiable otherwise. */
function ed25519Key(pem: string, from: string): KeyObject {
  let key: KeyObject;
  try {
    key = createPublicKey(pem);
  } catch (error) {
    throw new Unverifiable(`not a public key (${from}): ${reason(error)}`);
  }
  if (key.asymmetricKeyType !== 'ed25519')
    throw new Unverifiable(`anchors and checkpoints are signed with Ed25519, not ${key.asymmetricKeyType}`);
  return key;
}

/** --public-key, else AUDIT_ANCHOR_PUBLIC_KEY or the public half of AUDIT_ANCHOR_PRIVATE_KEY, else `npm start`'s key file. */
function evidenceKey(publicKeyPath: string | undefined): EvidenceKey {
  if (publicKeyPath !== undefined)
    return { key: ed25519Key(readKey(publicKeyPath), publicKeyPath), from: publicKeyPath };
  const configured = configuredAnchorPublicKey();
  if (configured) return { key: configured, from: 'AUDIT_ANCHOR_PUBLIC_KEY / AUDIT_ANCHOR_PRIVATE_KEY' };
  if (existsSync(localAnchorKeyFile))
    return { key: ed25519Key(readKey(localAnchorKeyFile), localAnchorKeyFile), from: localAnchorKeyFile };
  return undefined;
}

const signatures = (key: EvidenceKey) =>
  key
    ? `signatures of checkpoints and anchors checked with ${key.from}`
    : 'signatures of checkpoints and anchors NOT checked: no key (give --public-key)';

/** The anchors the witness at `location` holds of the organization. */
async function readWitness(location: string, orgId: string): Promise<{ location: string; anchors: WitnessedAnchor[] }> {
  try {
    return { location, anchors: await witnessedAnchors(witnessStoreAt(location), orgId) };
  } catch (error) {
    throw new Unverifiable(`cannot read the witness at ${location}: ${reason(error)}`);
  }
}

async function verifyInDatabase(
  query: { orgId: string; from?: string; to?: string },
  showProgress: boolean,
  key: EvidenceKey,
  kept?: KeptAnchor,
  witness?: { location: string; anchors: WitnessedAnchor[] },
): Promise<number> {
  // The embedded database of `npm start` (infra/local/main.ts, embedded-postgres.ts: its superuser and password).
  const url = process.env.DATABASE_URL || embeddedUrl();
  const db = createPgDb({ connectionString: url, max: 1, applicationName: 'logbook-audit-verify' });
  const progress = verifyProgress(
    `verifying organization ${query.orgId}`,
    showProgress || process.stderr.isTTY === true,
  );
  try {
    const result = await verifyChain(db, query.orgId, {
      from: query.from,
      to: query.to,
      onProgress: progress.update,
      reportHead: true,
      evidence: { publicKey: key?.key },
      ...(kept && { anchor: { anchor: kept.anchor, publicKey: kept.publicKey } }),
    });
    progress.end();
    const window = [query.from && `from ${query.from}`, query.to && `to ${query.to}`].filter(Boolean).join(' ');
    console.log(
      result.firstBreak
        ? `break: organization ${query.orgId}: ${describeChainBreak(result.firstBreak)} (${rows(result.checked)} checked)`
        : result.checked === 0
          ? `ok: organization ${query.orgId} has no audit rows${window && ` timestamped ${window}`}: nothing to check`
          : `ok: organization ${query.orgId}: chain intact, ${rows(result.checked)} checked${window && ` (the rows timestamped ${window}, and the links around them)`}`,
    );
    // The checksums prove the rows consistent with this head, not the head itself: it must match a copy kept elsewhere.
    console.log(
      result.head
        ? `head: organization ${query.orgId}: ${describeLink(result.head)} (compare it with a head kept outside the database, e.g. an export's)`
        : `head: organization ${query.orgId}: none`,
    );
    console.log(`evidence: ${signatures(key)}`);
    if (kept && result.anchor) {
      const { anchor } = kept;
      const signed = kept.publicKey
        ? `signature checked with ${kept.keyFrom}`
        : 'signature NOT checked: no public key (give --public-key)';
      console.log(
        result.anchor.ok
          ? `anchor: organization ${query.orgId}: the chain still holds the anchor of ${anchor.anchoredAt} (seq ${anchor.seq}, checksum ${anchor.checksum}); ${signed}`
          : `break: organization ${query.orgId}: the chain no longer holds the anchor of ${anchor.anchoredAt} (seq ${anchor.seq}, checksum ${anchor.checksum})` +
              `${kept.publicKey ? ', or its signature is not valid' : ''}; ${signed}`,
      );
    }
    const contradicted = witness && (await witnessContradiction(db, query.orgId, witness.anchors, key?.key));
    if (witness) {
      const newest = witness.anchors.at(-1);
      console.log(
        contradicted
          ? `break: organization ${query.orgId}: witness ${witness.location}: seq ${contradicted.seq}, kind ${contradicted.kind}: ${witnessBreakMeaning[contradicted.kind]}`
          : newest
            ? `witness: organization ${query.orgId}: the chain extends all ${witness.anchors.length} anchors witnessed at ${witness.location} (newest: seq ${newest.seq}, checksum ${newest.checksum}, ${newest.anchoredAt})`
            : `witness: organization ${query.orgId}: no anchor witnessed at ${witness.location}: nothing to compare`,
      );
    }
    return result.ok && !contradicted ? 0 : 1;
  } catch (error) {
    progress.end();
    const hint = process.env.DATABASE_URL
      ? 'DATABASE_URL'
      : 'the embedded database of `npm start`: is it running? Or set DATABASE_URL';
    throw new Unverifiable(`cannot verify in the database at ${location(url)} (${hint}): ${reason(error)}`);
  } finally {
    await db.close();
  }
}

const text = z.string().nullable();
/**
 * A JSON export (shared/audit/export.ts) as the verifier reads it: text wherever a row has text, so a changed
 * value is reported as an altered row rather than refused as an unreadable file.
 */
const exportFile = z.object({
  exportedAt: z.string(),
  filters: z.record(z.string(), z.unknown()),
  // Exports before heads were recorded have none.
  heads: z.record(z.string(), z.object({ seq: z.number().int(), checksum: z.string() })).optional(),
  // Exports made before signed evidence existed carry none.
  publicKey: z.string().nullable().optional(),
  evidence: z.record(z.string(), auditChainEvidence).optional(),
  rows: z.array(
    z.object({
      ...(Object.fromEntries(exportColumns.map((column) => [column, text])) as Record<
        (typeof exportColumns)[number],
        typeof text
      >),
      id: z.string(),
      orgId: z.string(),
      seq: z.number().int(),
      checksum: z.string(),
    }),
  ),
});

function readExport(path: string): z.output<typeof exportFile> {
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
    // A large export is served gzip-compressed (shared/http/download.ts); saved as sent, it is still readable.
    if (bytes[0] === 0x1f && bytes[1] === 0x8b) bytes = gunzipSync(bytes);
  } catch (error) {
    throw new Unverifiable(`cannot read ${path}: ${reason(error)}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(bytes.toString('utf8'));
  } catch (error) {
    throw new Unverifiable(`${path} is not JSON (only a format=json export verifies offline): ${reason(error)}`);
  }
  const parsed = exportFile.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new Unverifiable(
      `${path} is not an audit export (GET /api/v1/audit-logs/export?format=json): ${issue.path.join('.') || 'file'}: ${issue.message}`,
    );
  }
  return parsed.data;
}

function verifyFile(path: string, publicKeyPath: string | undefined): number {
  const file = readExport(path);
  // The file's own key proves only that the file is consistent with itself; a key kept elsewhere proves more.
  const key: EvidenceKey =
    publicKeyPath === undefined && file.publicKey
      ? { key: ed25519Key(file.publicKey, `the publicKey of ${path}`), from: `the publicKey of ${path}` }
      : evidenceKey(publicKeyPath);
  const narrowedBy = Object.keys(file.filters).filter((filter) => filter !== 'orgId');
  // Unfiltered and under the row cap, an export holds every row in scope: a gap in it is a row taken out of the file.
  const complete = narrowedBy.length === 0 && file.rows.length < maxExportRows;
  const result = verifyRowsOffline(file.rows as AuditRow[], {
    complete,
    heads: file.heads,
    evidence: file.evidence,
    publicKey: key?.key,
  });
  if (!result.contiguous) {
    const why =
      narrowedBy.length > 0
        ? `the export was filtered by ${narrowedBy.join(', ')}`
        : `the export holds only the ${count(maxExportRows)} newest rows by timestamp`;
    throw new Unverifiable(
      `not a contiguous range: cannot verify offline (organization ${result.orgId}: seq ${result.afterSeq} is followed by seq ${result.nextSeq}; ${why}). ` +
        `Verify in the database instead: npm run audit:verify -- --org ${result.orgId} [--from --to]`,
    );
  }
  if (result.chains.length === 0) {
    console.log(`ok: ${path} holds no rows: nothing to check`);
    return 0;
  }
  for (const chain of result.chains) {
    const span = `organization ${chain.orgId}: seq ${chain.firstSeq}..${chain.lastSeq}`;
    if (chain.firstBreak) console.log(`  ${span}: break at ${describeChainBreak(chain.firstBreak)}`);
    else if (chain.firstLinkChecked) console.log(`  ${span}: intact, from the chain's first row`);
    else
      console.log(
        `  ${span}: intact; the link of seq ${chain.firstSeq} to seq ${chain.firstSeq - 1} (prevChecksum ${chain.firstPrevChecksum ?? 'null'}) ` +
          `cannot be checked without the database`,
      );
    if (!chain.firstBreak) console.log(`    last verified: seq ${chain.lastSeq}, checksum ${chain.lastChecksum}`);
    console.log(
      `    head recorded in the export: ${chain.recordedHead ? describeLink(chain.recordedHead) : 'none (an export without heads)'}`,
    );
  }
  const scope = `${rows(result.checked)} of ${result.chains.length} organization${result.chains.length === 1 ? '' : 's'} checked offline against the file itself`;
  console.log(
    `${result.ok ? 'ok' : 'break'}: ${path} (exported ${file.exportedAt}): ${scope}${result.ok ? '' : '; the break is shown above'}`,
  );
  if (file.evidence) console.log(`evidence: ${signatures(key)}`);
  // Anyone can recompute unkeyed SHA-256 checksums: the file proves itself consistent, not authentic.
  console.log(
    'note: the file is checked against itself only, and a forged file can be made consistent: compare each recorded head with the live head ' +
      '(npm run audit:verify -- --org <orgId> prints it). It must be the same, or, when rows were added since, a later export must hold a row ' +
      'with the recorded seq and checksum.',
  );
  return result.ok ? 0 : 1;
}

/** The command line's options; throws on an unknown or malformed one. */
const parseOptions = (argv: string[]) =>
  parseArgs({
    args: argv,
    options: {
      org: { type: 'string' },
      from: { type: 'string' },
      to: { type: 'string' },
      file: { type: 'string' },
      anchor: { type: 'string' },
      witness: { type: 'string' },
      'public-key': { type: 'string' },
      progress: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
    allowPositionals: false,
  });

async function main(argv: string[]): Promise<number> {
  let values: ReturnType<typeof parseOptions>['values'];
  try {
    ({ values } = parseOptions(argv));
  } catch (error) {
    return usageError(usage, reason(error));
  }
  if (values.help) {
    console.log(usage);
    return 0;
  }
  if (values.file !== undefined) {
    if (
      values.org !== undefined ||
      values.from !== undefined ||
      values.to !== undefined ||
      values.anchor !== undefined ||
      values.witness !== undefined
    ) {
      return usageError(usage, '--file takes no --org, --from, --to, --anchor or --witness: the file is the range');
    }
    return verifyFile(values.file, values['public-key']);
  }
  if (values.org === undefined) return usageError(usage, 'give --org <orgId> or --file <export.json>');
  const query = auditVerifyQuery.safeParse({ orgId: values.org, from: values.from, to: values.to });
  if (!query.success) {
    const issue = query.error.issues[0]!;
    return usageError(usage, `--${issue.path[0] === 'orgId' ? 'org' : String(issue.path[0])}: ${issue.message}`);
  }
  if (values.anchor !== undefined && (values.from !== undefined || values.to !== undefined))
    return usageError(usage, '--anchor proves the whole chain: it takes no --from or --to');
  if (values.witness !== undefined && (values.from !== undefined || values.to !== undefined))
    return usageError(usage, '--witness proves the whole chain: it takes no --from or --to');
  const kept = values.anchor === undefined ? undefined : readAnchor(values.anchor, values.org, values['public-key']);
  const witness = values.witness === undefined ? undefined : await readWitness(values.witness, values.org);
  return verifyInDatabase(
    { orgId: values.org, from: query.data.from, to: query.data.to },
    values.progress,
    evidenceKey(values['public-key']),
    kept,
    witness,
  );
}

runCommand(
  () => main(process.argv.slice(2)),
  // Whatever went wrong, nothing was verified: never exit 1, which means a break was found.
  (error) => (error instanceof Unverifiable ? `error: ${error.message}` : error),
);
