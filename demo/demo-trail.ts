/**
 * A realistic audit trail for `npm start`'s demo partner, so the viewer has something to show: a second
 * organization (Northwind Traders) with a fleet of agents, and weeks of history in both organizations: people
 * logging in (and failing to), scripts run by technicians, automations and an AI agent, policies evaluated,
 * alerts raised by agents, devices changed with before/after values, exports, denied attempts.
 * Rows are generated from a fixed seed and written in one statement per organization, oldest first, so the
 * sealing trigger chains them in time order (about a second for the whole trail).
 */
import { hashSecret, newSecret, secretPrefixes } from '#shared/auth/secrets.ts';
import { type Db, one } from '#shared/db/db.ts';
import { insertOrganizationWithSite } from '#shared/hierarchy/organizations.ts';
import { insertAgent, insertDevice, insertSite } from '#shared/hierarchy/store.ts';
import { type Demo, demoIds } from './demo.ts';

/** An organization whose trail holds fewer rows than this gets the demo history (again, once deleted and recreated). */
const seededAtLeast = 100;
const day = 24 * 60 * 60 * 1000;

interface Person {
  id: string;
  name: string;
  email: string;
  role: string;
  department: string;
  /** Where they usually work from. */
  ips: string[];
  userAgent: string;
}

interface Agent {
  agentId: string;
  deviceId: string;
  hostname: string;
  siteName: string;
  ip: string;
}

interface Cast {
  orgId: string;
  orgName: string;
  admins: Person[];
  technicians: Person[];
  viewers: Person[];
  agents: Agent[];
  domain: string;
}

interface Row {
  timestamp: string;
  actor_type: 'user' | 'api_key' | 'agent' | 'system' | 'ai_agent';
  actor_id: string;
  actor_email: string | null;
  action: string;
  resource_type: string | null;
  resource_id: string | null;
  resource_name: string | null;
  details: Record<string, unknown>;
  ip_address: string | null;
  user_agent: string | null;
  result: 'success' | 'failure' | 'denied';
  error_message: string | null;
}

/** mulberry32: a small seeded generator, so every fresh start shows the same trail. */
function generator(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (min: number, max: number) => min + Math.floor(next() * (max - min + 1));
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!;
  const chance = (p: number) => next() < p;
  const uuid = () => {
    const hex = Array.from({ length: 32 }, () => Math.floor(next() * 16).toString(16)).join('');
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-${'89ab'[int(0, 3)]}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
  };
  return { next, int, pick, chance, uuid };
}
type Random = ReturnType<typeof generator>;

const browsers = [
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36',
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0',
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 14_6) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15',
  'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0',
  'Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1',
];

function person(
  random: Random,
  name: string,
  email: string,
  role: string,
  department: string,
  office: string,
  id = random.uuid(),
): Person {
  const home = random.chance(0.5)
    ? `198.51.100.${random.int(2, 250)}`
    : `2001:db8:${random.int(0x100, 0xfff).toString(16)}::${random.int(2, 0xff).toString(16)}`;
  return { id, name, email, role, department, ips: [office, office, home], userAgent: random.pick(browsers) };
}

const partnerStaff = (random: Random) => [
  person(
    random,
    'Demo Partner Admin',
    'admin@demo-msp.local',
    'partner_admin',
    'Demo MSP',
    '192.0.2.10',
    demoIds.partnerAdmin,
  ),
  person(
    random,
    'Sam Okafor',
    'sam.okafor@demo-msp.local',
    'partner_technician',
    'Demo MSP service desk',
    '192.0.2.11',
  ),
  person(
    random,
    'Aiko Tanaka',
    'aiko.tanaka@demo-msp.local',
    'partner_technician',
    'Demo MSP service desk',
    '192.0.2.12',
  ),
];

const scripts = [
  { name: 'Clear print spooler', parameters: {} },
  { name: 'Restart IIS application pool', parameters: { pool: 'DefaultAppPool' } },
  { name: 'Collect disk usage report', parameters: { drive: 'C:', top: 20 } },
  { name: 'Install 7-Zip 24.08', parameters: { silent: true } },
  { name: 'Flush DNS cache', parameters: {} },
  { name: 'Reset Windows Update components', parameters: { reboot: false } },
  { name: 'Rotate local administrator password', parameters: { length: 24 } },
  { name: 'Check BitLocker status', parameters: { volume: 'C:' } },
  { name: 'Restart Veeam services', parameters: {} },
  { name: 'Uninstall legacy VPN client', parameters: { product: 'OpenVPN GUI 2.4' } },
];
const scriptFailures = [
  { exitCode: 1, message: 'Exit code 1: Access is denied.' },
  { exitCode: null, message: 'Timed out after 300 s' },
  { exitCode: 1603, message: 'Exit code 1603: Fatal error during installation.' },
  { exitCode: 2, message: 'Exit code 2: The system cannot find the file specified.' },
];

const policies = [
  {
    name: 'Patch Tuesday ring 1',
    before: { schedule: 'Tue 22:00', rebootWindow: '02:00-04:00', enabled: true },
    after: { schedule: 'Wed 22:00', rebootWindow: '01:00-05:00', enabled: true },
  },
  {
    name: 'Workstation hardening baseline',
    before: { usbStorage: 'allow', screenLockMinutes: 15 },
    after: { usbStorage: 'block', screenLockMinutes: 10 },
  },
  {
    name: 'Disk space monitor',
    before: { thresholdPercent: 90, severity: 'warning' },
    after: { thresholdPercent: 85, severity: 'critical' },
  },
  { name: 'Server backup verification', before: { maxAgeHours: 48 }, after: { maxAgeHours: 26 } },
  {
    name: 'Defender signature freshness',
    before: { maxAgeDays: 3, enabled: false },
    after: { maxAgeDays: 2, enabled: true },
  },
];
const automations = [
  'Nightly disk cleanup',
  'Restart stuck spooler on alert',
  'Weekly inventory sync',
  'Onboarding: install standard apps',
];
const monitors = [
  { monitor: 'Disk space', text: (v: number) => `Disk C: ${v}% full`, range: [86, 99], threshold: 85 },
  { monitor: 'CPU load', text: (v: number) => `CPU above ${v}% for 15 minutes`, range: [90, 100], threshold: 90 },
  { monitor: 'Service state', text: () => 'Service Spooler stopped', range: [0, 0], threshold: 0 },
  { monitor: 'Backup age', text: (v: number) => `Last backup ${v} hours ago`, range: [27, 70], threshold: 26 },
  { monitor: 'Memory', text: (v: number) => `Memory use ${v}%`, range: [91, 99], threshold: 90 },
];
const loginFailures = [
  'Invalid password',
  'Invalid password',
  'MFA code expired',
  'Account locked after 5 failed attempts',
];

function userRow(
  person: Person,
  random: Random,
  row: Omit<Row, 'actor_type' | 'actor_id' | 'actor_email' | 'ip_address' | 'user_agent' | 'timestamp'> & {
    sessionId?: string;
  },
): Omit<Row, 'timestamp'> {
  const { sessionId, details, ...rest } = row;
  return {
    ...rest,
    actor_type: 'user',
    actor_id: person.id,
    actor_email: person.email,
    details: {
      ...details,
      ...(sessionId && { sessionId }),
      actor: { name: person.name, role: person.role, department: person.department },
    },
    ip_address: random.pick(person.ips),
    user_agent: person.userAgent,
  };
}

function agentRow(
  agent: Agent,
  row: Omit<Row, 'actor_type' | 'actor_id' | 'actor_email' | 'ip_address' | 'user_agent' | 'timestamp'>,
): Omit<Row, 'timestamp'> {
  return {
    ...row,
    actor_type: 'agent',
    actor_id: agent.agentId,
    actor_email: null,
    details: { ...row.details, actor: { name: agent.hostname, role: null } },
    ip_address: agent.ip,
    user_agent: 'Logbook-Agent/1.4.2 (windows; amd64)',
  };
}

function systemRow(
  row: Omit<Row, 'actor_type' | 'actor_id' | 'actor_email' | 'ip_address' | 'user_agent' | 'timestamp'>,
): Omit<Row, 'timestamp'> {
  return {
    ...row,
    actor_type: 'system',
    actor_id: '00000000-0000-0000-0000-000000000000',
    actor_email: null,
    details: { ...row.details, actor: { name: null, role: null } },
    ip_address: null,
    user_agent: null,
  };
}

const success = { result: 'success' as const, error_message: null };
const deviceOf = (agent: Agent) => ({
  resource_type: 'device',
  resource_id: agent.deviceId,
  resource_name: agent.hostname,
});

/** One kind of event: how often it happens, whether people do it in office hours, and a row of it. */
interface EventKind {
  weight: number;
  officeHours: boolean;
  make(cast: Cast, random: Random): Omit<Row, 'timestamp'>;
}

const eventKinds: EventKind[] = [
  {
    weight: 16,
    officeHours: true,
    make: (cast, r) => {
      const who = r.pick([...cast.admins, ...cast.technicians, ...cast.technicians, ...cast.viewers]);
      return userRow(who, r, {
        action: 'user.login',
        resource_type: 'user',
        resource_id: who.id,
        resource_name: who.email,
        details: { method: r.pick(['password', 'sso', 'sso']), mfa: true },
        sessionId: r.uuid(),
        ...success,
      });
    },
  },
  {
    weight: 4,
    officeHours: false,
    make: (cast, r) => {
      // Mostly a person mistyping, sometimes someone trying accounts from outside.
      const who = r.pick([...cast.technicians, ...cast.viewers]);
      if (r.chance(0.35)) {
        const email = r.pick([`administrator@${cast.domain}`, `admin@${cast.domain}`, `it@${cast.domain}`, who.email]);
        return {
          action: 'user.login.failed',
          actor_type: 'user',
          actor_id: '00000000-0000-0000-0000-000000000000',
          actor_email: email,
          resource_type: 'user',
          resource_id: null,
          resource_name: email,
          details: { method: 'password', attempt: r.int(1, 12), actor: { name: null, role: null } },
          ip_address: `192.0.2.${r.int(100, 200)}`,
          user_agent: 'python-requests/2.32.3',
          result: 'failure',
          error_message: r.pick(['Unknown user', 'Invalid password', 'Account locked after 5 failed attempts']),
        };
      }
      return userRow(who, r, {
        action: 'user.login.failed',
        resource_type: 'user',
        resource_id: who.id,
        resource_name: who.email,
        details: { method: 'password', attempt: r.int(1, 3) },
        result: 'failure',
        error_message: r.pick(loginFailures),
      });
    },
  },
  {
    weight: 6,
    officeHours: true,
    make: (cast, r) => {
      const who = r.pick([...cast.admins, ...cast.technicians, ...cast.viewers]);
      return userRow(who, r, {
        action: 'user.logout',
        resource_type: 'user',
        resource_id: who.id,
        resource_name: who.email,
        details: { reason: r.pick(['user', 'user', 'idle timeout']) },
        sessionId: r.uuid(),
        ...success,
      });
    },
  },
  {
    weight: 1,
    officeHours: true,
    make: (cast, r) => {
      const target = r.pick([...cast.technicians, ...cast.viewers]);
      const change = {
        before: { role: target.role === 'org_viewer' ? 'org_viewer' : 'org_technician', permissions: ['devices:read'] },
        after: { role: target.role, permissions: ['devices:read', 'scripts:execute'] },
      };
      if (r.chance(0.25)) {
        const who = r.pick(cast.technicians);
        return userRow(who, r, {
          action: 'user.permission.change',
          resource_type: 'user',
          resource_id: target.id,
          resource_name: target.email,
          details: change,
          result: 'denied',
          error_message: 'Missing permission users:manage',
        });
      }
      return userRow(r.pick(cast.admins), r, {
        action: 'user.permission.change',
        resource_type: 'user',
        resource_id: target.id,
        resource_name: target.email,
        details: change,
        ...success,
      });
    },
  },
  {
    weight: 8,
    officeHours: true,
    make: (cast, r) => {
      const agent = r.pick(cast.agents);
      const changes = r.pick([
        {
          before: { displayName: null },
          after: { displayName: `${agent.hostname} (${r.pick(['reception', 'finance', 'spare', 'meeting room'])})` },
        },
        { before: { siteId: r.uuid(), siteName: 'Head Office' }, after: { siteId: r.uuid(), siteName: 'Warehouse' } },
        {
          before: { tags: ['windows'] },
          after: { tags: ['windows', r.pick(['vip', 'kiosk', 'finance', 'pilot-ring'])] },
        },
        { before: { maintenanceMode: false }, after: { maintenanceMode: true, maintenanceUntil: '02:00' } },
      ]);
      return userRow(r.pick([...cast.admins, ...cast.technicians]), r, {
        action: 'device.update',
        ...deviceOf(agent),
        details: changes,
        ...success,
      });
    },
  },
  {
    weight: 0.4,
    officeHours: true,
    make: (cast, r) => {
      const hostname = `${cast.agents[0]!.hostname.split('-')[0]}-LT-${r.int(10, 99).toString().padStart(4, '0')}`;
      return userRow(r.pick(cast.admins), r, {
        action: 'device.delete',
        resource_type: 'device',
        resource_id: r.uuid(),
        resource_name: hostname,
        details: {
          before: { hostname, osType: 'windows', siteName: 'Head Office', lastSeen: '41 days ago' },
          after: {},
        },
        ...success,
      });
    },
  },
  {
    weight: 14,
    officeHours: true,
    make: (cast, r) => {
      const script = r.pick(scripts);
      const agent = r.pick(cast.agents);
      const details = {
        deviceId: agent.deviceId,
        hostname: agent.hostname,
        parameters: script.parameters,
        durationMs: r.int(800, 95_000),
      };
      const resource = { resource_type: 'script', resource_id: null, resource_name: script.name };
      const outcome = r.next();
      if (outcome < 0.05)
        return userRow(r.pick(cast.viewers), r, {
          action: 'script.execute',
          ...resource,
          details,
          result: 'denied',
          error_message: 'Missing permission scripts:execute',
        });
      // A failure's exit code is the one its message names (none when it timed out).
      const failure = outcome > 0.9 ? r.pick(scriptFailures) : undefined;
      const result = failure ? { result: 'failure' as const, error_message: failure.message } : success;
      const withExit = { ...details, exitCode: failure ? failure.exitCode : 0 };
      if (r.chance(0.12)) {
        return {
          action: 'script.execute',
          actor_type: 'ai_agent',
          actor_id: '6f1c1e00-0a1a-4c8e-9a11-00000000a1a1',
          actor_email: null,
          ...resource,
          details: {
            ...withExit,
            actor: { name: 'Logbook Copilot', role: null },
            requestedBy: r.pick(cast.technicians).email,
            reason: 'Suggested fix for an open alert',
          },
          ip_address: null,
          user_agent: 'logbook-copilot/0.9',
          ...result,
        };
      }
      if (r.chance(0.2))
        return systemRow({
          action: 'script.execute',
          ...resource,
          details: { ...withExit, automation: r.pick(automations) },
          ...result,
        });
      return userRow(r.pick([...cast.admins, ...cast.technicians, ...cast.technicians]), r, {
        action: 'script.execute',
        ...resource,
        details: withExit,
        ...result,
      });
    },
  },
  {
    weight: 2.5,
    officeHours: true,
    make: (cast, r) => {
      const policy = r.pick(policies);
      const create = r.chance(0.2);
      return userRow(r.pick(cast.admins), r, {
        action: create ? 'policy.create' : 'policy.update',
        resource_type: 'policy',
        resource_id: null,
        resource_name: policy.name,
        details: create ? { after: policy.before } : { before: policy.before, after: policy.after },
        ...success,
      });
    },
  },
  {
    weight: 1,
    officeHours: true,
    make: (cast, r) =>
      userRow(r.pick(cast.admins), r, {
        action: 'policy.assign',
        resource_type: 'policy',
        resource_id: null,
        resource_name: r.pick(policies).name,
        details: { target: r.pick(['site Head Office', 'site Warehouse', 'group Servers', 'group Laptops']) },
        ...success,
      }),
  },
  {
    weight: 6,
    officeHours: false,
    make: (cast, r) => {
      const devices = cast.agents.length;
      const nonCompliant = r.chance(0.7) ? 0 : r.int(1, 3);
      return systemRow({
        action: 'policy.evaluate',
        resource_type: 'policy',
        resource_id: null,
        resource_name: r.pick(policies).name,
        details: { devicesEvaluated: devices, compliant: devices - nonCompliant, nonCompliant },
        ...success,
      });
    },
  },
  {
    weight: 3,
    officeHours: false,
    make: (cast, r) =>
      systemRow({
        action: 'automation.policy.evaluate',
        resource_type: 'automation',
        resource_id: null,
        resource_name: r.pick(automations),
        details: { triggered: r.int(0, 2), skipped: r.int(0, cast.agents.length) },
        ...success,
      }),
  },
  {
    weight: 7,
    officeHours: false,
    make: (cast, r) => {
      const agent = r.pick(cast.agents);
      const monitor = r.pick(monitors);
      const value = r.int(monitor.range[0]!, monitor.range[1]!);
      return agentRow(agent, {
        action: 'alert.create',
        resource_type: 'alert',
        resource_id: r.uuid(),
        resource_name: `${agent.hostname}: ${monitor.text(value)}`,
        details: {
          severity: r.pick(['warning', 'warning', 'critical']),
          monitor: monitor.monitor,
          value,
          threshold: monitor.threshold,
        },
        ...success,
      });
    },
  },
  {
    weight: 3,
    officeHours: true,
    make: (cast, r) => {
      const who = r.pick(cast.technicians);
      const agent = r.pick(cast.agents);
      return userRow(who, r, {
        action: 'alert.acknowledge',
        resource_type: 'alert',
        resource_id: r.uuid(),
        resource_name: `${agent.hostname}: ${r.pick(monitors).text(r.int(86, 99))}`,
        details: { before: { status: 'open', assignee: null }, after: { status: 'acknowledged', assignee: who.email } },
        ...success,
      });
    },
  },
  {
    weight: 2,
    officeHours: true,
    make: (cast, r) => {
      const agent = r.pick(cast.agents);
      return userRow(r.pick(cast.technicians), r, {
        action: 'alert.resolve',
        resource_type: 'alert',
        resource_id: r.uuid(),
        resource_name: `${agent.hostname}: ${r.pick(monitors).text(r.int(86, 99))}`,
        details: {
          before: { status: 'acknowledged' },
          after: {
            status: 'resolved',
            resolution: r.pick(['Fixed by script', 'Cleared temp files', 'False positive', 'Hardware replaced']),
          },
        },
        ...success,
      });
    },
  },
  {
    weight: 3,
    officeHours: true,
    make: (cast, r) =>
      userRow(r.pick([...cast.admins, ...cast.viewers]), r, {
        action: 'data.access',
        resource_type: 'audit_log',
        resource_id: r.uuid(),
        resource_name: null,
        details: {},
        ...success,
      }),
  },
  {
    weight: 0.8,
    officeHours: true,
    make: (cast, r) => {
      const format = r.pick(['csv', 'json']);
      return userRow(r.pick([...cast.admins, ...cast.viewers]), r, {
        action: 'data.export',
        resource_type: 'audit_log',
        resource_id: null,
        resource_name: `audit-logs-2026${r.int(1000, 1231)}T${r.int(100000, 235959)}Z.${format}`,
        details: {
          format,
          filters: r.pick([{}, { action: 'user.login' }, { resource: 'policy' }]),
          rowCount: r.int(40, 4000),
        },
        ...success,
      });
    },
  },
  {
    weight: 0.3,
    officeHours: true,
    make: (cast, r) =>
      userRow(r.pick(cast.admins), r, {
        action: 'organization.update',
        resource_type: 'organization',
        resource_id: cast.orgId,
        resource_name: cast.orgName,
        details: r.pick([
          { before: { retentionDays: 365 }, after: { retentionDays: 730 } },
          { before: { externalId: null }, after: { externalId: `PSA-${r.int(1000, 9999)}` } },
        ]),
        ...success,
      }),
  },
  {
    weight: 9,
    officeHours: false,
    make: (cast, r) => {
      const agent = r.pick(cast.agents);
      const submitted = r.int(5, 180);
      const duplicates = r.chance(0.3) ? r.int(1, Math.min(10, submitted)) : 0;
      return agentRow(agent, {
        action: 'agent.eventlogs.submit',
        ...deviceOf(agent),
        details: { submitted, inserted: submitted - duplicates, duplicates },
        ...success,
      });
    },
  },
  {
    weight: 1.2,
    officeHours: false,
    make: (cast, r) => {
      const agent = r.pick(cast.agents);
      const previousIp = agent.ip;
      agent.ip = r.chance(0.7) ? `203.0.113.${r.int(2, 250)}` : `198.51.100.${r.int(2, 250)}`;
      return agentRow(agent, {
        action: 'agent.source.ip.changed',
        ...deviceOf(agent),
        details: { previousIp, ip: agent.ip },
        ...success,
      });
    },
  },
  {
    weight: 2,
    officeHours: false,
    make: (cast, r) => {
      const agent = r.pick(cast.agents);
      const ticket = `T${r.int(20_000, 29_999)}`;
      return {
        action: r.chance(0.5) ? 'device.update' : 'data.access',
        actor_type: 'api_key',
        actor_id: '3f9a2c10-5b7e-4d21-8c3a-00000000c0de',
        actor_email: null,
        ...deviceOf(agent),
        details: {
          before: { psaTicket: null },
          after: { psaTicket: ticket },
          actor: { name: 'PSA integration (lbk_3f9a2c10)', role: 'org_technician' },
        },
        ip_address: '192.0.2.80',
        user_agent: 'ConnectWise-Sync/2024.2',
        ...success,
      };
    },
  },
];
const totalWeight = eventKinds.reduce((sum, kind) => sum + kind.weight, 0);

function pickKind(random: Random): EventKind {
  let at = random.next() * totalWeight;
  for (const kind of eventKinds) {
    at -= kind.weight;
    if (at < 0) return kind;
  }
  return eventKinds.at(-1)!;
}

/** When something happened in the last `days` days: people mostly on weekdays, 07:00 to 19:00 UTC; machines any time. */
function when(random: Random, now: number, days: number, officeHours: boolean): number {
  for (;;) {
    const at = now - random.next() * days * day - 60_000;
    if (!officeHours) return at;
    const date = new Date(at);
    const weekend = date.getUTCDay() === 0 || date.getUTCDay() === 6;
    const office = date.getUTCHours() >= 7 && date.getUTCHours() < 19;
    if ((office && !weekend) || random.chance(0.06)) return at;
  }
}

/** The organization's history: the enrollment of `enrolled` agents at its start, then `count` events, oldest first. */
function history(
  cast: Cast,
  random: Random,
  plan: { count: number; days: number; now: number; enrolled: Agent[] },
): Row[] {
  const { count, days, now } = plan;
  const rows: Row[] = [];
  const start = now - days * day - 2 * 60 * 60 * 1000;
  plan.enrolled.forEach((agent, i) => {
    rows.push({
      ...agentRow(agent, {
        action: 'device.create',
        ...deviceOf(agent),
        details: { siteName: agent.siteName, osType: 'windows', agentVersion: '1.4.2' },
        ...success,
      }),
      timestamp: new Date(start + i * 7 * 60_000).toISOString(),
    });
  });
  // Times first, then the events in time order, so what one event changes (an agent's IP) holds for the next.
  const planned = Array.from({ length: count }, () => {
    const kind = pickKind(random);
    return { kind, at: when(random, now, days, kind.officeHours) };
  }).sort((a, b) => a.at - b.at);
  for (const { kind, at } of planned) rows.push({ ...kind.make(cast, random), timestamp: new Date(at).toISOString() });
  return rows;
}

/** Appends the rows in one statement, in their order, so the sealing trigger chains them oldest first. */
async function appendTrail(admin: Db, orgId: string, rows: Row[]): Promise<void> {
  await admin.query(
    `INSERT INTO audit_entries (id, org_id, timestamp, actor_type, actor_id, actor_email, action, resource_type, resource_id, resource_name, details, ip_address, user_agent, result, error_message)
     SELECT gen_random_uuid(), :orgId::uuid, r.timestamp, r.actor_type, r.actor_id, r.actor_email, r.action, r.resource_type, r.resource_id, r.resource_name,
            r.details, r.ip_address, r.user_agent, r.result, r.error_message
       FROM jsonb_to_recordset(:rows::jsonb) AS r(n int, timestamp timestamptz, actor_type audit_actor_type, actor_id uuid, actor_email text,
            action text, resource_type text, resource_id uuid, resource_name text, details jsonb, ip_address text, user_agent text, result audit_result,
            error_message text)
      ORDER BY r.n`,
    { orgId, rows: rows.map((row, n) => ({ n, ...row })) },
  );
}

const auditRowCount = async (admin: Db, orgId: string) =>
  (await one<{ n: number }>(admin, 'SELECT count(*)::int AS n FROM audit_logs WHERE org_id = :orgId::uuid', { orgId }))!
    .n;

const northwindFleet = [
  { hostname: 'NW-DC01', site: 'Head Office', os: 'Windows Server 2022' },
  { hostname: 'NW-FS01', site: 'Head Office', os: 'Windows Server 2022' },
  { hostname: 'NW-SQL01', site: 'Head Office', os: 'Windows Server 2019' },
  { hostname: 'NW-RDS01', site: 'Head Office', os: 'Windows Server 2022' },
  { hostname: 'NW-LT-0142', site: 'Head Office', os: 'Windows 11 23H2' },
  { hostname: 'NW-LT-0157', site: 'Head Office', os: 'Windows 11 23H2' },
  { hostname: 'NW-WH-PC01', site: 'Warehouse', os: 'Windows 10 22H2' },
  { hostname: 'NW-WH-SCAN02', site: 'Warehouse', os: 'Windows 10 IoT' },
];

/** Northwind Traders under the demo partner, with its two sites and a fleet of agents (once: found again on restart). */
async function northwind(admin: Db, random: Random): Promise<{ orgId: string; orgName: string; agents: Agent[] }> {
  const orgName = 'Northwind Traders';
  const found = await one<{ id: string }>(
    admin,
    `SELECT id FROM organizations WHERE partner_id = :partnerId::uuid AND name = :orgName::text AND deleted_at IS NULL ORDER BY created_at LIMIT 1`,
    { partnerId: demoIds.partner, orgName },
  );
  const orgId =
    found?.id ??
    (await admin.transaction(async (tx) => {
      const org = await insertOrganizationWithSite(
        tx,
        { partnerId: demoIds.partner, name: orgName },
        { name: 'Head Office', timezone: 'Europe/London' },
      );
      const warehouse = await insertSite(tx, org.id, { name: 'Warehouse', timezone: 'Europe/London' });
      const siteIds: Record<string, string> = {
        'Head Office': (org.site as { id: string }).id,
        Warehouse: (warehouse as { id: string }).id,
      };
      for (const device of northwindFleet) {
        const created = await insertDevice(tx, {
          orgId: org.id,
          siteId: siteIds[device.site]!,
          hostname: device.hostname,
          osType: 'windows',
          osVersion: device.os,
          agentVersion: '1.4.2',
        });
        // These agents never connect: their token is thrown away.
        await insertAgent(tx, created!.id, hashSecret(newSecret(secretPrefixes.agentToken)));
      }
      return org.id;
    }));
  const { rows } = await admin.query<{ agentId: string; deviceId: string; hostname: string; siteName: string }>(
    `SELECT a.id::text AS "agentId", d.id::text AS "deviceId", d.hostname, s.name AS "siteName"
       FROM devices d JOIN agents a ON a.device_id = d.id JOIN sites s ON s.id = d.site_id
      WHERE d.org_id = :orgId::uuid AND d.deleted_at IS NULL ORDER BY d.hostname`,
    { orgId },
  );
  return { orgId, orgName, agents: rows.map((row) => ({ ...row, ip: `203.0.113.${random.int(2, 250)}` })) };
}

/**
 * Seeds the demo trail where it is missing: Northwind Traders (about 2,600 rows over 45 days) and the demo
 * organization (about 900 rows over 30 days, its demo device as the agent). Returns the rows written.
 */
export async function seedDemoTrail(admin: Db, demo: Demo): Promise<number> {
  const random = generator(20_260_301);
  const now = Date.now();
  const staff = partnerStaff(random);
  const nw = await northwind(admin, random);
  const demoDevice: Agent = {
    agentId: demo.agentId,
    deviceId: demo.deviceId,
    hostname: 'demo-device',
    siteName: 'Main Office',
    ip: '203.0.113.70',
  };
  // The demo device enrolled for real at first start; Northwind's fleet enrolls at the start of its history.
  const casts: [Cast, { count: number; days: number; enrolled: Agent[] }][] = [
    [
      {
        orgId: nw.orgId,
        orgName: nw.orgName,
        domain: 'northwind.example',
        admins: [
          person(random, 'Priya Shah', 'priya.shah@northwind.example', 'org_admin', 'IT', '203.0.113.20'),
          staff[0]!,
        ],
        technicians: [
          person(
            random,
            'Marcus Lee',
            'marcus.lee@northwind.example',
            'org_technician',
            'Service desk',
            '203.0.113.20',
          ),
          person(
            random,
            'Jana Novák',
            'jana.novak@northwind.example',
            'org_technician',
            'Infrastructure',
            '203.0.113.21',
          ),
          staff[1]!,
          staff[2]!,
        ],
        viewers: [
          person(random, 'Oliver Grant', 'oliver.grant@northwind.example', 'org_viewer', 'Finance', '203.0.113.22'),
        ],
        agents: nw.agents,
      },
      { count: 2_600, days: 45, enrolled: nw.agents },
    ],
    [
      {
        orgId: demo.orgId,
        orgName: 'Demo Organization',
        domain: 'demo-org.local',
        admins: [
          person(random, 'Demo Org Admin', 'admin@demo-org.local', 'org_admin', 'IT', '203.0.113.60', demoIds.orgAdmin),
          staff[0]!,
        ],
        technicians: [
          person(random, 'Lena Fischer', 'lena.fischer@demo-org.local', 'org_technician', 'IT', '203.0.113.60'),
          staff[1]!,
        ],
        viewers: [person(random, 'Tom Becker', 'tom.becker@demo-org.local', 'org_viewer', 'Finance', '203.0.113.61')],
        agents: [demoDevice],
      },
      { count: 900, days: 30, enrolled: [] },
    ],
  ];
  let written = 0;
  for (const [cast, plan] of casts) {
    if ((await auditRowCount(admin, cast.orgId)) >= seededAtLeast) continue;
    const rows = history(cast, random, { ...plan, now });
    await appendTrail(admin, cast.orgId, rows);
    written += rows.length;
  }
  return written;
}
