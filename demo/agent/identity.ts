/**
 * The simulated agent's identity in agent.yaml, as a real deployment keeps it: enrollment runs only
 * when the file does not exist.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

export interface AgentIdentity {
  server: string;
  agentId: string;
  deviceId: string;
  token: string;
  hostname: string;
}

const fields = ['server', 'agentId', 'deviceId', 'token', 'hostname'] as const;

/** Reads agent.yaml (flat `key: "value"` lines), or undefined when there is none. */
export function readIdentity(path: string): AgentIdentity | undefined {
  if (!existsSync(path)) return undefined;
  const values: Record<string, string> = {};
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    const match = /^([A-Za-z]+):\s*(.*?)\s*$/.exec(line);
    if (!match) continue;
    const raw = match[2]!;
    values[match[1]!] = raw.startsWith('"') ? (JSON.parse(raw) as string) : raw;
  }
  const missing = fields.filter((field) => !values[field]);
  if (missing.length > 0) throw new Error(`${path} lacks ${missing.join(', ')}; delete it to enroll again`);
  return values as unknown as AgentIdentity;
}

export function writeIdentity(path: string, identity: AgentIdentity): void {
  mkdirSync(dirname(path), { recursive: true });
  const lines = fields.map((field) => `${field}: ${JSON.stringify(identity[field])}`);
  writeFileSync(
    path,
    `# Logbook simulated agent, written at enrollment. Delete this file to enroll again.\n${lines.join('\n')}\n`,
    { mode: 0o600 },
  );
}

/** The simulated machine's serial number, reported at enrollment and heartbeat: the same for the same hostname. */
export const simulatedSerial = (hostname: string) =>
  `SIM${createHash('sha256').update(hostname).digest('hex').slice(0, 12).toUpperCase()}`;

/** The server answered and refused the enrollment (401/403: key or secret invalid, expired, revoked or used up). */
export class EnrollmentRefused extends Error {}
/** The server could not be reached at all. */
export class ServerUnreachable extends Error {}

/** Enrolls with an enrollment key (and secret, when the server requires one) and returns the new identity. */
export async function enroll(options: {
  server: string;
  enrollmentKey: string;
  enrollmentSecret?: string;
  hostname: string;
  agentVersion: string;
}): Promise<AgentIdentity> {
  const reply = await fetch(`${options.server}/api/v1/agents/enroll`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      enrollmentKey: options.enrollmentKey,
      enrollmentSecret: options.enrollmentSecret,
      hostname: options.hostname,
      serialNumber: simulatedSerial(options.hostname),
      osType: 'windows',
      osVersion: 'Windows Server 2022 Standard 10.0.20348',
      agentVersion: options.agentVersion,
    }),
  }).catch((error: unknown) => {
    throw new ServerUnreachable(`Cannot reach ${options.server}: ${String(error)}`);
  });
  const body = (await reply.json().catch(() => ({}))) as {
    agentId?: string;
    deviceId?: string;
    token?: string;
    error?: { message?: string };
  };
  if (reply.status === 401 || reply.status === 403)
    throw new EnrollmentRefused(`Enrollment refused: ${reply.status} ${body.error?.message ?? ''}`);
  if (reply.status !== 201 || !body.agentId || !body.deviceId || !body.token) {
    throw new Error(`Enrollment failed: ${reply.status} ${body.error?.message ?? JSON.stringify(body)}`);
  }
  return {
    server: options.server,
    agentId: body.agentId,
    deviceId: body.deviceId,
    token: body.token,
    hostname: options.hostname,
  };
}
