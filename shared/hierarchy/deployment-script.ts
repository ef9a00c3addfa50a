import type { FileDelivery } from '../audit/export.ts';
import { openSecret } from '../auth/key-seal.ts';
import type { Principal } from '../auth/principal.ts';
import { reachableOrganization } from '../auth/reachable-organization.ts';
import type { Db } from '../db/db.ts';
import { NotFound } from '../errors.ts';
import { selectEnrollmentKey } from './store.ts';

export const deploymentPlatforms = ['windows', 'macos', 'linux'] as const;
export type DeploymentPlatform = (typeof deploymentPlatforms)[number];

/** Where the agent keeps agent.yaml and where its command is installed, per platform (overridable by environment). */
const defaults: Record<DeploymentPlatform, { stateDir: string; command: string }> = {
  linux: { stateDir: '/etc/logbook-agent', command: '/opt/logbook-agent/bin/logbook-agent' },
  macos: { stateDir: '/Library/Application Support/Logbook/Agent', command: '/usr/local/bin/logbook-agent' },
  windows: {
    stateDir: '$env:ProgramData\\Logbook\\Agent',
    command: '$env:ProgramFiles\\Logbook\\Agent\\logbook-agent.exe',
  },
};

const keyPlaceholder = '__ENROLLMENT_KEY__';
const secretPlaceholder = '__ENROLLMENT_SECRET__';

/** A value inside single quotes of both sh and PowerShell. */
const shQuote = (text: string) => `'${text.replaceAll("'", `'\\''`)}'`;
const psQuote = (text: string) => `'${text.replaceAll("'", "''")}'`;

export interface ScriptValues {
  serverUrl: string;
  key: string;
  secret: string;
  keyId: string;
}

/**
 * GET …/enrollment-keys/{keyId}/deployment-script: a script the old RMM's job engine runs on every
 * machine, as often as scheduled. It carries the server address and the key (recovered from its sealed form; a
 * placeholder for keys that have none), and the enrollment secret only for a platform-scope caller (the setting is
 * the platform's; others get a placeholder the operator fills in or passes as LOGBOOK_ENROLLMENT_SECRET).
 */
export async function deploymentScript<R>(
  db: Db,
  principal: Principal,
  orgId: string,
  keyId: string,
  platform: DeploymentPlatform,
  serverUrl: string,
  delivery: FileDelivery<R>,
) {
  await reachableOrganization(db, principal, orgId, 'enrollment:manage');
  const key = await selectEnrollmentKey(db, orgId, keyId);
  if (!key) throw NotFound('Enrollment key');
  const configured = process.env.AGENT_ENROLLMENT_SECRET;
  const values: ScriptValues = {
    serverUrl,
    keyId,
    key: openSecret(key.keySealed) ?? keyPlaceholder,
    secret: !configured ? '' : principal.scope === 'platform' ? configured : secretPlaceholder,
  };
  return delivery.deliver(
    platform === 'windows'
      ? {
          filename: `logbook-deploy-${keyId}.ps1`,
          contentType: 'text/plain; charset=utf-8',
          body: powershellScript(values),
        }
      : {
          filename: `logbook-deploy-${keyId}-${platform}.sh`,
          contentType: 'text/x-shellscript; charset=utf-8',
          body: posixScript(values, platform),
        },
  );
}

const exitCodes = `Exit codes: 0 enrolled now or already enrolled (the output says which), 2 the server refused the key or
# secret, 3 the server cannot be reached, 1 anything else. No key, secret or token is printed.`;

export function posixScript(v: ScriptValues, platform: 'macos' | 'linux'): string {
  const d = defaults[platform];
  return `#!/bin/sh
# Logbook agent deployment (${platform}), enrollment key ${v.keyId}. Safe to schedule repeatedly: a no-op once
# agent.yaml exists. AGENT_STATE_DIR (default ${d.stateDir}) is where agent.yaml lives; AGENT_COMMAND (default
# ${d.command}) runs the installed agent; LOGBOOK_ENROLLMENT_KEY / LOGBOOK_ENROLLMENT_SECRET override placeholders.
# ${exitCodes}
set -u
SERVER_URL=${shQuote(v.serverUrl)}
ENROLLMENT_KEY=\${LOGBOOK_ENROLLMENT_KEY:-}
[ -n "$ENROLLMENT_KEY" ] || ENROLLMENT_KEY=${shQuote(v.key)}
ENROLLMENT_SECRET=\${LOGBOOK_ENROLLMENT_SECRET:-}
[ -n "$ENROLLMENT_SECRET" ] || ENROLLMENT_SECRET=${shQuote(v.secret)}
STATE_DIR="\${AGENT_STATE_DIR:-${d.stateDir}}"
AGENT_COMMAND="\${AGENT_COMMAND:-${d.command}}"
STATE_FILE="$STATE_DIR/agent.yaml"
LOCK_DIR="$STATE_DIR/.deploy.lock"

say() { printf 'logbook-deploy: %s\\n' "$*"; }

if [ -f "$STATE_FILE" ]; then
  say "already enrolled: $STATE_FILE exists, nothing to do"
  exit 0
fi
if [ "$ENROLLMENT_KEY" = '${keyPlaceholder}' ]; then
  say "no enrollment key in this script: set LOGBOOK_ENROLLMENT_KEY"
  exit 1
fi
if [ "$ENROLLMENT_SECRET" = '${secretPlaceholder}' ]; then
  say "the server requires the enrollment secret: set LOGBOOK_ENROLLMENT_SECRET"
  exit 1
fi
mkdir -p "$STATE_DIR" || { say "cannot create $STATE_DIR"; exit 1; }

# One run at a time per machine: mkdir is atomic; a lock whose process is gone is taken over.
waited=0
while ! mkdir "$LOCK_DIR" 2>/dev/null; do
  holder=$(cat "$LOCK_DIR/pid" 2>/dev/null || true)
  if [ -n "$holder" ] && ! kill -0 "$holder" 2>/dev/null; then
    rm -rf "$LOCK_DIR"
    continue
  fi
  if [ "$waited" -ge 300 ]; then
    say "another deployment still holds $LOCK_DIR after 300 s"
    exit 1
  fi
  sleep 1
  waited=$((waited + 1))
done
echo $$ > "$LOCK_DIR/pid"
trap 'rm -rf "$LOCK_DIR"' EXIT
trap 'exit 1' INT TERM
if [ -f "$STATE_FILE" ]; then
  say "already enrolled: $STATE_FILE was written by a concurrent run, nothing to do"
  exit 0
fi

# Install step: the installed agent enrolls and writes agent.yaml (key and secret by environment, never on the command line).
LOGBOOK_ENROLLMENT_KEY="$ENROLLMENT_KEY" LOGBOOK_ENROLLMENT_SECRET="$ENROLLMENT_SECRET" \\
  $AGENT_COMMAND enroll --url "$SERVER_URL" --state "$STATE_FILE"
rc=$?
case "$rc" in
  0)
    if [ -f "$STATE_FILE" ]; then
      say "enrolled: agent.yaml written to $STATE_FILE"
      exit 0
    fi
    say "the agent reported success but wrote no $STATE_FILE"
    exit 1
    ;;
  2) say "enrollment refused by the server: the key or secret is invalid, expired, revoked or used up"; exit 2 ;;
  3) say "the server cannot be reached at $SERVER_URL"; exit 3 ;;
  126 | 127) say "the agent command cannot run: $AGENT_COMMAND"; exit 1 ;;
  *) say "enrollment failed (agent exit code $rc)"; exit 1 ;;
esac
`;
}

export function powershellScript(v: ScriptValues): string {
  const d = defaults.windows;
  return `# Logbook agent deployment (Windows), enrollment key ${v.keyId}. Safe to schedule repeatedly: a no-op once
# agent.yaml exists. AGENT_STATE_DIR (default ${d.stateDir}) is where agent.yaml lives; AGENT_COMMAND (default
# ${d.command}) is the installed agent's executable; LOGBOOK_ENROLLMENT_KEY / LOGBOOK_ENROLLMENT_SECRET override placeholders.
# ${exitCodes}
$ErrorActionPreference = 'Stop'
$ServerUrl = ${psQuote(v.serverUrl)}
$EnrollmentKey = if ($env:LOGBOOK_ENROLLMENT_KEY) { $env:LOGBOOK_ENROLLMENT_KEY } else { ${psQuote(v.key)} }
$EnrollmentSecret = if ($env:LOGBOOK_ENROLLMENT_SECRET) { $env:LOGBOOK_ENROLLMENT_SECRET } else { ${psQuote(v.secret)} }
$StateDir = if ($env:AGENT_STATE_DIR) { $env:AGENT_STATE_DIR } else { "${d.stateDir}" }
$AgentCommand = if ($env:AGENT_COMMAND) { $env:AGENT_COMMAND } else { "${d.command}" }
$StateFile = Join-Path $StateDir 'agent.yaml'

function Say([string] $Text) { Write-Output "logbook-deploy: $Text" }

if (Test-Path -LiteralPath $StateFile) {
  Say "already enrolled: $StateFile exists, nothing to do"
  exit 0
}
if ($EnrollmentKey -eq '${keyPlaceholder}') {
  Say 'no enrollment key in this script: set LOGBOOK_ENROLLMENT_KEY'
  exit 1
}
if ($EnrollmentSecret -eq '${secretPlaceholder}') {
  Say 'the server requires the enrollment secret: set LOGBOOK_ENROLLMENT_SECRET'
  exit 1
}
try {
  New-Item -ItemType Directory -Force -Path $StateDir | Out-Null
} catch {
  Say "cannot create $StateDir"
  exit 1
}

# One run at a time per machine: a named system-wide mutex, released when the process ends.
$Mutex = New-Object System.Threading.Mutex($false, 'Global\\LogbookAgentDeploy')
try {
  $Owned = $Mutex.WaitOne([TimeSpan]::FromSeconds(300))
} catch [System.Threading.AbandonedMutexException] {
  $Owned = $true
}
if (-not $Owned) {
  Say 'another deployment still holds the lock after 300 s'
  exit 1
}
try {
  if (Test-Path -LiteralPath $StateFile) {
    Say "already enrolled: $StateFile was written by a concurrent run, nothing to do"
    exit 0
  }
  # Install step: the installed agent enrolls and writes agent.yaml (key and secret by environment, never on the command line).
  $env:LOGBOOK_ENROLLMENT_KEY = $EnrollmentKey
  $env:LOGBOOK_ENROLLMENT_SECRET = $EnrollmentSecret
  try {
    & $AgentCommand enroll --url $ServerUrl --state $StateFile
    $Code = $LASTEXITCODE
  } catch {
    Say "the agent command cannot run: $AgentCommand"
    exit 1
  } finally {
    Remove-Item -Path 'Env:LOGBOOK_ENROLLMENT_KEY', 'Env:LOGBOOK_ENROLLMENT_SECRET' -ErrorAction SilentlyContinue
  }
  switch ($Code) {
    0 {
      if (Test-Path -LiteralPath $StateFile) {
        Say "enrolled: agent.yaml written to $StateFile"
        exit 0
      }
      Say "the agent reported success but wrote no $StateFile"
      exit 1
    }
    2 { Say 'enrollment refused by the server: the key or secret is invalid, expired, revoked or used up'; exit 2 }
    3 { Say "the server cannot be reached at $ServerUrl"; exit 3 }
    default { Say "enrollment failed (agent exit code $Code)"; exit 1 }
  }
} finally {
  $Mutex.ReleaseMutex()
}
`;
}
