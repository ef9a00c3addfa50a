/**
 * The simulated agent's Windows event logs: a generated, deterministic store (the same hostname and
 * anchor time give the same events) of Application, System, Security, Setup and Sysmon's Operational
 * channel, two weeks deep, with the events a Windows server of a managed customer writes: logons and
 * failed logons (4624, 4625, 4634, 4672, 4688), service changes (7036, 7040), reboots (1074, 6006,
 * 6005, 6009, 6013), an unexpected shutdown (41, 6008), application crashes (1000, 1001, 1026),
 * servicing packages, Sysmon process, network and DNS events. rawXml follows the Windows event XML schema.
 */
import { createHash } from 'node:crypto';
import type { LiveEventFilter, LiveEventLevel } from '#shared/live-query/protocol.ts';

export interface EventLogDescriptor {
  name: string;
  displayName: string;
  recordCount: number;
  maxSize: number;
  retentionDays: number;
  lastWriteTime: string;
}

export interface LiveEvent {
  recordId: number;
  timeCreated: string;
  level: LiveEventLevel;
  source: string;
  eventId: number;
  message: string;
  category: string;
  user: string | null;
  computer: string;
  rawXml: string;
}

/** One stored record; message and rawXml are rendered when asked for. */
interface EventRecord {
  log: LogDefinition;
  recordId: number;
  time: number;
  spec: EventSpec;
}

/** What a template produces for one event. */
interface EventSpec {
  eventId: number;
  level: LiveEventLevel;
  provider: Provider;
  /** Task category as Event Viewer shows it. */
  category: string;
  task: number;
  keywords: string;
  /** XML <Level>: 0 (LogAlways, audit events), 1 critical, 2 error, 3 warning, 4 information. */
  xmlLevel: number;
  qualifiers?: number;
  /** The SID in <Security UserID>, shown as the account name. */
  user?: { sid: string; name: string };
  data: [string, string][];
  message: string;
}

interface Provider {
  name: string;
  guid?: string;
  eventSourceName?: string;
}

interface LogDefinition {
  name: string;
  displayName: string;
  maxSize: number;
  retentionDays: number;
  /** Background events over the window, drawn from the templates by weight. */
  count: number;
  templates: [weight: number, template: Template][];
}

interface Context {
  rng: Rng;
  computer: string;
  time: number;
}

type Template = (context: Context) => EventSpec;

export interface EventStore {
  computer: string;
  list(): EventLogDescriptor[];
  get(name: string): EventLogDescriptor | undefined;
  events(name: string, filter: LiveEventFilter): { events: LiveEvent[]; total: number } | undefined;
  event(name: string, recordId: number): LiveEvent | undefined;
  /** Every record with its log's name, oldest first (for submitting stored event logs). */
  all(): { log: string; event: LiveEvent }[];
}

/** A small seeded PRNG (mulberry32): the same seed, the same store. */
class Rng {
  private state: number;
  constructor(seed: string) {
    this.state = createHash('sha256').update(seed).digest().readUInt32LE(0);
  }
  next(): number {
    this.state = (this.state + 0x6d2b79f5) | 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)]!;
  }
  hex(digits: number): string {
    let out = '';
    for (let i = 0; i < digits; i++) out += '0123456789abcdef'[this.int(0, 15)];
    return out;
  }
  guid(): string {
    return `{${this.hex(8)}-${this.hex(4)}-${this.hex(4)}-${this.hex(4)}-${this.hex(12)}}`.toUpperCase();
  }
}

const DOMAIN = 'CONTOSO';
const domainSid = 'S-1-5-21-3623811015-3361044348-30300820';
const people = ['jdoe', 'asmith', 'mbrown', 'lgarcia', 'kchen', 'it-admin', 'svc-backup', 'svc-sql'];
const system = { sid: 'S-1-5-18', name: 'NT AUTHORITY\\SYSTEM' };
const localService = { sid: 'S-1-5-19', name: 'NT AUTHORITY\\LOCAL SERVICE' };
const sidOf = (user: string) => `${domainSid}-${1100 + people.indexOf(user)}`;
const workstations = ['WS-0042', 'WS-0107', 'LT-0213', 'LT-0388', 'FS01', 'DC01'];
const clientIp = (rng: Rng) => `10.0.${rng.int(1, 9)}.${rng.int(10, 250)}`;
const logonId = (rng: Rng) => `0x${rng.int(0x10000, 0xffffff).toString(16).toUpperCase()}`;

const providers = {
  security: { name: 'Microsoft-Windows-Security-Auditing', guid: '{54849625-5478-4994-A5BA-3E3B0328C30D}' },
  scm: {
    name: 'Service Control Manager',
    guid: '{555908d1-a6d7-4695-8e1e-26931d2012f4}',
    eventSourceName: 'Service Control Manager',
  },
  eventLog: { name: 'EventLog' },
  user32: { name: 'User32' },
  kernelPower: { name: 'Microsoft-Windows-Kernel-Power', guid: '{331C3B3A-2005-44C2-AC5E-77220C37D6B4}' },
  kernelGeneral: { name: 'Microsoft-Windows-Kernel-General', guid: '{A68CA8B7-004F-D7B6-A698-07E2DE0F1F5D}' },
  dcom: {
    name: 'Microsoft-Windows-DistributedCOM',
    guid: '{1B562E86-B7AA-4131-BADC-B6F3A001407E}',
    eventSourceName: 'DCOM',
  },
  dns: { name: 'Microsoft-Windows-DNS-Client', guid: '{1C95126E-7EEA-49A9-A3FE-A378B03DDB4D}' },
  disk: { name: 'disk' },
  appError: { name: 'Application Error' },
  wer: { name: 'Windows Error Reporting' },
  dotnet: { name: '.NET Runtime' },
  spp: {
    name: 'Microsoft-Windows-Security-SPP',
    guid: '{E23B33B0-C8C9-472C-A5F9-F2BDFEA0F156}',
    eventSourceName: 'Software Protection Platform Service',
  },
  msi: { name: 'MsiInstaller' },
  esent: { name: 'ESENT' },
  vss: { name: 'VSS' },
  servicing: { name: 'Microsoft-Windows-Servicing', guid: '{BD12F3B8-FC40-4A61-A307-B7A013A069C1}' },
  sysmon: { name: 'Microsoft-Windows-Sysmon', guid: '{5770385F-C22A-43E0-BF4C-06F5698FFBD9}' },
} satisfies Record<string, Provider>;

const auditSuccess = '0x8020000000000000';
const auditFailure = '0x8010000000000000';
const classic = '0x80000000000000';

/** Event Viewer's rendering of an event's data under headings, as the Security log shows it. */
const block = (title: string, rows: [string, string][]) =>
  `${title}:\n${rows.map(([k, v]) => `\t${k}:\t\t${v}`).join('\n')}`;

// ---- Security ----------------------------------------------------------------------------------

const logon: Template = ({ rng, computer }) => {
  const user = rng.pick(people);
  const type = rng.pick(['2', '3', '3', '3', '10', '5']);
  const workstation = rng.pick(workstations);
  const ip = type === '5' ? '-' : clientIp(rng);
  const id = logonId(rng);
  const subjectName = `${computer.split('.')[0]!.toUpperCase()}$`;
  return {
    eventId: 4624,
    level: 'information',
    provider: providers.security,
    category: 'Logon',
    task: 12544,
    keywords: auditSuccess,
    xmlLevel: 0,
    data: [
      ['SubjectUserSid', 'S-1-5-18'],
      ['SubjectUserName', subjectName],
      ['SubjectDomainName', DOMAIN],
      ['SubjectLogonId', '0x3e7'],
      ['TargetUserSid', sidOf(user)],
      ['TargetUserName', user],
      ['TargetDomainName', DOMAIN],
      ['TargetLogonId', id],
      ['LogonType', type],
      ['LogonProcessName', type === '3' ? 'NtLmSsp ' : 'User32 '],
      ['AuthenticationPackageName', type === '3' ? 'NTLM' : 'Negotiate'],
      ['WorkstationName', workstation],
      ['IpAddress', ip],
      ['IpPort', ip === '-' ? '-' : String(rng.int(49152, 65535))],
    ],
    message: [
      'An account was successfully logged on.',
      block('Subject', [
        ['Security ID', 'SYSTEM'],
        ['Account Name', subjectName],
        ['Account Domain', DOMAIN],
        ['Logon ID', '0x3E7'],
      ]),
      block('Logon Information', [
        ['Logon Type', type],
        ['Restricted Admin Mode', '-'],
        ['Virtual Account', 'No'],
        ['Elevated Token', user === 'it-admin' ? 'Yes' : 'No'],
      ]),
      block('New Logon', [
        ['Security ID', `${DOMAIN}\\${user}`],
        ['Account Name', user],
        ['Account Domain', DOMAIN],
        ['Logon ID', id],
      ]),
      block('Network Information', [
        ['Workstation Name', workstation],
        ['Source Network Address', ip],
        ['Source Port', '0'],
      ]),
    ].join('\n\n'),
  };
};

const failedLogon: Template = ({ rng }) => {
  const user = rng.pick([...people, 'administrator', 'admin', 'test', 'scanner']);
  const ip = rng.next() < 0.3 ? `185.220.${rng.int(100, 110)}.${rng.int(1, 254)}` : clientIp(rng);
  const badPassword = people.includes(user);
  const subStatus = badPassword ? '0xC000006A' : '0xC0000064';
  return {
    // An audit failure is Level 0 in the XML, like every audit event; it is reported as a warning so that level filters find it.
    eventId: 4625,
    level: 'warning',
    provider: providers.security,
    category: 'Logon',
    task: 12544,
    keywords: auditFailure,
    xmlLevel: 0,
    data: [
      ['SubjectUserSid', 'S-1-0-0'],
      ['TargetUserName', user],
      ['TargetDomainName', DOMAIN],
      ['Status', '0xC000006D'],
      ['FailureReason', '%%2313'],
      ['SubStatus', subStatus],
      ['LogonType', '3'],
      ['LogonProcessName', 'NtLmSsp '],
      ['AuthenticationPackageName', 'NTLM'],
      ['WorkstationName', rng.pick(workstations)],
      ['IpAddress', ip],
      ['IpPort', '0'],
    ],
    message: [
      'An account failed to log on.',
      block('Subject', [
        ['Security ID', 'NULL SID'],
        ['Account Name', '-'],
        ['Account Domain', '-'],
        ['Logon ID', '0x0'],
      ]),
      'Logon Type:\t\t\t3',
      block('Account For Which Logon Failed', [
        ['Security ID', 'NULL SID'],
        ['Account Name', user],
        ['Account Domain', DOMAIN],
      ]),
      block('Failure Information', [
        ['Failure Reason', 'Unknown user name or bad password.'],
        ['Status', '0xC000006D'],
        ['Sub Status', subStatus],
      ]),
      block('Network Information', [
        ['Source Network Address', ip],
        ['Source Port', '0'],
      ]),
    ].join('\n\n'),
  };
};

const logoff: Template = ({ rng }) => {
  const user = rng.pick(people);
  const id = logonId(rng);
  return {
    eventId: 4634,
    level: 'information',
    provider: providers.security,
    category: 'Logoff',
    task: 12545,
    keywords: auditSuccess,
    xmlLevel: 0,
    data: [
      ['TargetUserSid', sidOf(user)],
      ['TargetUserName', user],
      ['TargetDomainName', DOMAIN],
      ['TargetLogonId', id],
      ['LogonType', '3'],
    ],
    message: [
      'An account was logged off.',
      block('Subject', [
        ['Security ID', `${DOMAIN}\\${user}`],
        ['Account Name', user],
        ['Account Domain', DOMAIN],
        ['Logon ID', id],
      ]),
      'Logon Type:\t\t\t3',
      'This event is generated when a logon session is destroyed.',
    ].join('\n\n'),
  };
};

const specialLogon: Template = ({ rng }) => {
  const user = rng.pick(['it-admin', 'svc-backup', 'svc-sql', 'SYSTEM']);
  const privileges = [
    'SeSecurityPrivilege',
    'SeBackupPrivilege',
    'SeRestorePrivilege',
    'SeTakeOwnershipPrivilege',
    'SeDebugPrivilege',
    'SeImpersonatePrivilege',
  ];
  return {
    eventId: 4672,
    level: 'information',
    provider: providers.security,
    category: 'Special Logon',
    task: 12548,
    keywords: auditSuccess,
    xmlLevel: 0,
    data: [
      ['SubjectUserSid', user === 'SYSTEM' ? 'S-1-5-18' : sidOf(user)],
      ['SubjectUserName', user],
      ['SubjectDomainName', user === 'SYSTEM' ? 'NT AUTHORITY' : DOMAIN],
      ['SubjectLogonId', logonId(rng)],
      ['PrivilegeList', privileges.join('\n\t\t\t')],
    ],
    message: [
      'Special privileges assigned to new logon.',
      block('Subject', [
        ['Security ID', user],
        ['Account Name', user],
        ['Account Domain', DOMAIN],
      ]),
      `Privileges:\t\t${privileges.join('\n\t\t\t')}`,
    ].join('\n\n'),
  };
};

const processes = [
  'C:\\Windows\\System32\\cmd.exe',
  'C:\\Windows\\System32\\WindowsPowerShell\\v1.0\\powershell.exe',
  'C:\\Windows\\System32\\svchost.exe',
  'C:\\Program Files\\Microsoft Office\\root\\Office16\\OUTLOOK.EXE',
  'C:\\Windows\\System32\\taskhostw.exe',
  'C:\\Program Files\\Google\\Chrome\\Application\\chrome.exe',
  'C:\\Windows\\System32\\wbem\\WmiPrvSE.exe',
  'C:\\Program Files\\RMM Agent\\agent.exe',
];

const processCreation: Template = ({ rng }) => {
  const image = rng.pick(processes);
  const user = rng.pick(people);
  const pid = `0x${rng.int(0x100, 0x3fff).toString(16)}`;
  return {
    eventId: 4688,
    level: 'information',
    provider: providers.security,
    category: 'Process Creation',
    task: 13312,
    keywords: auditSuccess,
    xmlLevel: 0,
    data: [
      ['SubjectUserSid', sidOf(user)],
      ['SubjectUserName', user],
      ['SubjectDomainName', DOMAIN],
      ['NewProcessId', pid],
      ['NewProcessName', image],
      ['TokenElevationType', '%%1938'],
      ['ParentProcessName', 'C:\\Windows\\explorer.exe'],
    ],
    message: [
      'A new process has been created.',
      block('Creator Subject', [
        ['Security ID', `${DOMAIN}\\${user}`],
        ['Account Name', user],
        ['Account Domain', DOMAIN],
      ]),
      block('Process Information', [
        ['New Process ID', pid],
        ['New Process Name', image],
        ['Token Elevation Type', '%%1938'],
        ['Creator Process Name', 'C:\\Windows\\explorer.exe'],
      ]),
    ].join('\n\n'),
  };
};

const lockout: Template = ({ rng, computer }) => {
  const user = rng.pick(people.slice(0, 5));
  return {
    eventId: 4740,
    level: 'information',
    provider: providers.security,
    category: 'User Account Management',
    task: 13824,
    keywords: auditSuccess,
    xmlLevel: 0,
    data: [
      ['TargetUserName', user],
      ['TargetDomainName', rng.pick(workstations)],
      ['TargetSid', sidOf(user)],
      ['SubjectUserSid', 'S-1-5-18'],
    ],
    message: [
      'A user account was locked out.',
      block('Subject', [
        ['Security ID', 'SYSTEM'],
        ['Account Name', `${computer.split('.')[0]!.toUpperCase()}$`],
      ]),
      block('Account That Was Locked Out', [
        ['Security ID', `${DOMAIN}\\${user}`],
        ['Account Name', user],
      ]),
    ].join('\n\n'),
  };
};

// ---- System ------------------------------------------------------------------------------------

const services = [
  'Windows Update',
  'Background Intelligent Transfer Service',
  'Windows Modules Installer',
  'Print Spooler',
  'WinHTTP Web Proxy Auto-Discovery Service',
  'Microsoft Defender Antivirus Service',
  'Windows Error Reporting Service',
  'Volume Shadow Copy',
  'Software Protection',
  'Delivery Optimization',
];

const serviceState: Template = ({ rng }) => {
  const service = rng.pick(services);
  const state = rng.pick(['running', 'stopped']);
  return {
    eventId: 7036,
    level: 'information',
    provider: providers.scm,
    category: 'None',
    task: 0,
    keywords: classic,
    xmlLevel: 4,
    qualifiers: 16384,
    data: [
      ['param1', service],
      ['param2', state],
    ],
    message: `The ${service} service entered the ${state} state.`,
  };
};

const startType: Template = ({ rng }) => {
  const service = rng.pick(services);
  return {
    eventId: 7040,
    level: 'information',
    provider: providers.scm,
    category: 'None',
    task: 0,
    keywords: classic,
    xmlLevel: 4,
    qualifiers: 16384,
    user: system,
    data: [
      ['param1', service],
      ['param2', 'demand start'],
      ['param3', 'auto start'],
    ],
    message: `The start type of the ${service} service was changed from demand start to auto start.`,
  };
};

const serviceFailed: Template = ({ rng }) => {
  const service = rng.pick(['Contoso Backup Agent', 'SQL Server Agent (MSSQLSERVER)', 'Print Spooler']);
  return {
    eventId: 7000,
    level: 'error',
    provider: providers.scm,
    category: 'None',
    task: 0,
    keywords: classic,
    xmlLevel: 2,
    qualifiers: 49152,
    data: [
      ['param1', service],
      ['param2', '%%2'],
    ],
    message: `The ${service} service failed to start due to the following error: \nThe system cannot find the file specified.`,
  };
};

const serviceCrashed: Template = ({ rng }) => {
  const service = rng.pick(['Print Spooler', 'Windows Error Reporting Service', 'Contoso Backup Agent']);
  return {
    eventId: 7031,
    level: 'error',
    provider: providers.scm,
    category: 'None',
    task: 0,
    keywords: classic,
    xmlLevel: 2,
    qualifiers: 49152,
    data: [
      ['param1', service],
      ['param2', '1'],
      ['param3', '60000'],
      ['param4', '1'],
      ['param5', 'Restart the service'],
    ],
    message: `The ${service} service terminated unexpectedly.  It has done this 1 time(s).  The following corrective action will be taken in 60000 milliseconds: Restart the service.`,
  };
};

const dcom: Template = ({ rng }) => {
  const clsid = rng.pick(['{2593F8B9-4EAF-457C-B68A-50F6B8EA6B54}', '{D63B10C5-BB46-4990-A94F-E40B9D520160}']);
  return {
    eventId: 10016,
    level: 'warning',
    provider: providers.dcom,
    category: 'None',
    task: 0,
    keywords: classic,
    xmlLevel: 3,
    qualifiers: 0,
    user: localService,
    data: [
      ['param1', 'application-specific'],
      ['param2', 'Local'],
      ['param3', 'Activation'],
      ['param4', clsid],
      ['param5', '{15C20B67-12E7-4BB6-92BB-7AFF07997402}'],
    ],
    message: `The application-specific permission settings do not grant Local Activation permission for the COM Server application with CLSID \n${clsid}\n and APPID \n{15C20B67-12E7-4BB6-92BB-7AFF07997402}\n to the user NT AUTHORITY\\LOCAL SERVICE SID (S-1-5-19) from address LocalHost (Using LRPC) running in the application container Unavailable SID (Unavailable). This security permission can be modified using the Component Services administrative tool.`,
  };
};

const dnsTimeout: Template = ({ rng }) => {
  const name = rng.pick(['wpad', 'wpad.contoso.local', 'login.microsoftonline.com', 'fs01.contoso.local']);
  return {
    eventId: 1014,
    level: 'warning',
    provider: providers.dns,
    category: '(1014)',
    task: 1014,
    keywords: '0x4000000000000000',
    xmlLevel: 3,
    user: { sid: 'S-1-5-20', name: 'NT AUTHORITY\\NETWORK SERVICE' },
    data: [
      ['QueryName', name],
      ['AddressLength', '128'],
    ],
    message: `Name resolution for the name ${name} timed out after none of the configured DNS servers responded.`,
  };
};

const badBlock: Template = () => ({
  eventId: 7,
  level: 'error',
  provider: providers.disk,
  category: 'None',
  task: 0,
  keywords: classic,
  xmlLevel: 2,
  qualifiers: 49156,
  data: [['param1', '\\Device\\Harddisk1\\DR1']],
  message: 'The device, \\Device\\Harddisk1\\DR1, has a bad block.',
});

const uptime: Template = ({ rng }) => {
  const seconds = rng.int(3_600, 900_000);
  return {
    eventId: 6013,
    level: 'information',
    provider: providers.eventLog,
    category: 'None',
    task: 0,
    keywords: classic,
    xmlLevel: 4,
    qualifiers: 32768,
    data: [
      ['param7', String(seconds)],
      ['param8', '60'],
      ['param9', '-60 W. Europe Standard Time'],
    ],
    message: `The system uptime is ${seconds} seconds.`,
  };
};

/** A planned restart (1074, 6006) and the boot after it (12, 6009, 6005). */
function restart(rng: Rng, computer: string, time: number): EventSpec[] {
  const host = computer.split('.')[0]!.toUpperCase();
  return [
    {
      eventId: 1074,
      level: 'information',
      provider: providers.user32,
      category: 'None',
      task: 0,
      keywords: classic,
      xmlLevel: 4,
      qualifiers: 32768,
      user: system,
      data: [
        ['param1', `C:\\Windows\\servicing\\TrustedInstaller.exe (${host})`],
        ['param2', host],
        ['param3', 'Operating System: Upgrade (Planned)'],
        ['param4', '0x80020003'],
        ['param5', 'restart'],
      ],
      message: `The process C:\\Windows\\servicing\\TrustedInstaller.exe (${host}) has initiated the restart of computer ${host} on behalf of user NT AUTHORITY\\SYSTEM for the following reason: Operating System: Upgrade (Planned)\n Reason Code: 0x80020003\n Shutdown Type: restart\n Comment: `,
    },
    {
      eventId: 6006,
      level: 'information',
      provider: providers.eventLog,
      category: 'None',
      task: 0,
      keywords: classic,
      xmlLevel: 4,
      qualifiers: 32768,
      data: [],
      message: 'The Event log service was stopped.',
    },
    ...boot(rng, time + 3_000),
  ];
}

function boot(rng: Rng, time: number): EventSpec[] {
  const started = new Date(time).toISOString();
  return [
    {
      eventId: 12,
      level: 'information',
      provider: providers.kernelGeneral,
      category: '(1)',
      task: 1,
      keywords: classic,
      xmlLevel: 4,
      user: system,
      data: [
        ['MajorVersion', '10'],
        ['MinorVersion', '0'],
        ['BuildVersion', '20348'],
        ['QfeVersion', String(rng.int(2000, 2400))],
        ['StartTime', started],
      ],
      message: `The operating system started at system time ${started}.`,
    },
    {
      eventId: 6009,
      level: 'information',
      provider: providers.eventLog,
      category: 'None',
      task: 0,
      keywords: classic,
      xmlLevel: 4,
      qualifiers: 32768,
      data: [
        ['param1', '10.00.'],
        ['param2', '20348'],
        ['param3', ''],
        ['param4', 'Multiprocessor Free'],
        ['param5', '0'],
      ],
      message: 'Microsoft (R) Windows (R) 10.00. 20348  Multiprocessor Free.',
    },
    {
      eventId: 6005,
      level: 'information',
      provider: providers.eventLog,
      category: 'None',
      task: 0,
      keywords: classic,
      xmlLevel: 4,
      qualifiers: 32768,
      data: [],
      message: 'The Event log service was started.',
    },
  ];
}

/** A power loss: Kernel-Power 41 and EventLog 6008 on the boot after it. */
function crash(rng: Rng, time: number): EventSpec[] {
  const lost = new Date(time - rng.int(60_000, 600_000));
  return [
    ...boot(rng, time),
    {
      eventId: 6008,
      level: 'error',
      provider: providers.eventLog,
      category: 'None',
      task: 0,
      keywords: classic,
      xmlLevel: 2,
      qualifiers: 32768,
      data: [
        ['param1', lost.toISOString().slice(11, 19)],
        ['param2', lost.toISOString().slice(0, 10)],
      ],
      message: `The previous system shutdown at ${lost.toISOString().slice(11, 19)} on ${lost.toISOString().slice(0, 10)} was unexpected.`,
    },
    {
      eventId: 41,
      level: 'critical',
      provider: providers.kernelPower,
      category: '(63)',
      task: 63,
      keywords: '0x8000400000000002',
      xmlLevel: 1,
      user: system,
      data: [
        ['BugcheckCode', '0'],
        ['BugcheckParameter1', '0x0'],
        ['SleepInProgress', '0'],
        ['PowerButtonTimestamp', '0'],
        ['BootAppStatus', '0'],
      ],
      message:
        'The system has rebooted without cleanly shutting down first. This error could be caused if the system stopped responding, crashed, or lost power unexpectedly.',
    },
  ];
}

// ---- Application -------------------------------------------------------------------------------

const crashingApps = [
  ['OUTLOOK.EXE', '16.0.17328.20162'],
  ['LOBClient.exe', '4.2.0.118'],
  ['chrome.exe', '124.0.6367.119'],
  ['sqlservr.exe', '2022.160.4105.2'],
] as const;

const appCrash: Template = ({ rng }) => {
  const [app, version] = rng.pick(crashingApps);
  const module = rng.pick(['ntdll.dll', 'KERNELBASE.dll', 'ucrtbase.dll', 'mso40uiwin32client.dll']);
  const pid = `0x${rng.int(0x100, 0x3fff).toString(16)}`;
  const report = rng.guid().slice(1, -1).toLowerCase();
  return {
    eventId: 1000,
    level: 'error',
    provider: providers.appError,
    category: '(100)',
    task: 100,
    keywords: classic,
    xmlLevel: 2,
    qualifiers: 0,
    data: [
      ['AppName', app],
      ['AppVersion', version],
      ['ModuleName', module],
      ['ExceptionCode', 'c0000005'],
      ['FaultingOffset', `0x${rng.hex(16)}`],
      ['ProcessId', pid],
      ['ReportId', report],
    ],
    message: `Faulting application name: ${app}, version: ${version}, time stamp: 0x${rng.hex(8)}\nFaulting module name: ${module}, version: 10.0.20348.2340, time stamp: 0x${rng.hex(8)}\nException code: 0xc0000005\nFault offset: 0x${rng.hex(16)}\nFaulting process id: ${pid}\nFaulting application path: C:\\Program Files\\${app}\nFaulting module path: C:\\Windows\\System32\\${module}\nReport Id: ${report}`,
  };
};

const werReport: Template = ({ rng }) => {
  const [app] = rng.pick(crashingApps);
  return {
    eventId: 1001,
    level: 'information',
    provider: providers.wer,
    category: 'None',
    task: 0,
    keywords: classic,
    xmlLevel: 4,
    qualifiers: 0,
    data: [
      ['Bucket', String(rng.int(1_000_000, 9_999_999))],
      ['EventName', 'APPCRASH'],
      ['P1', app],
    ],
    message: `Fault bucket ${rng.int(1_000_000_000, 2_000_000_000)}, type 4\nEvent Name: APPCRASH\nResponse: Not available\nCab Id: 0\n\nProblem signature:\nP1: ${app}\n\nAttached files:\n\\\\?\\C:\\ProgramData\\Microsoft\\Windows\\WER\\Temp\\WER${rng.hex(4).toUpperCase()}.tmp.WERInternalMetadata.xml`,
  };
};

const dotnetCrash: Template = () => ({
  eventId: 1026,
  level: 'error',
  provider: providers.dotnet,
  category: 'None',
  task: 0,
  keywords: classic,
  xmlLevel: 2,
  qualifiers: 0,
  data: [['param1', 'Application: LOBClient.exe']],
  message:
    'Application: LOBClient.exe\nFramework Version: v4.0.30319\nDescription: The process was terminated due to an unhandled exception.\nException Info: System.IO.FileNotFoundException\n   at Contoso.Lob.Settings.Load(System.String)\n   at Contoso.Lob.Program.Main(System.String[])',
});

const sppRestart: Template = ({ time }) => {
  const at = new Date(time + 86_400_000).toISOString().replace(/\.\d+Z$/, 'Z');
  return {
    eventId: 16384,
    level: 'information',
    provider: providers.spp,
    category: 'None',
    task: 0,
    keywords: classic,
    xmlLevel: 4,
    qualifiers: 16384,
    data: [
      ['param1', at],
      ['param2', 'RulesEngine'],
    ],
    message: `Successfully scheduled Software Protection service for re-start at ${at}. Reason: RulesEngine.`,
  };
};

const esentAttach: Template = ({ rng }) => ({
  eventId: 326,
  level: 'information',
  provider: providers.esent,
  category: 'General',
  task: 1,
  keywords: classic,
  xmlLevel: 4,
  qualifiers: 0,
  data: [
    ['param1', 'svchost'],
    ['param2', `${rng.int(1000, 9000)},D,50`],
    ['param3', 'C:\\Windows\\system32\\SRU\\SRUDB.dat'],
  ],
  message: `svchost (${rng.int(1000, 9000)},D,50) SRUJet: The database engine attached a database (1, C:\\Windows\\system32\\SRU\\SRUDB.dat). (Time=0 seconds)`,
});

const vssIdle: Template = () => ({
  eventId: 8224,
  level: 'information',
  provider: providers.vss,
  category: 'None',
  task: 0,
  keywords: classic,
  xmlLevel: 4,
  qualifiers: 0,
  data: [],
  message: 'The VSS service is shutting down due to idle timeout.',
});

const msiInstalled: Template = ({ rng }) => {
  const [product, version] = rng.pick([
    ['Google Chrome', '124.0.6367.119'],
    ['7-Zip 23.01 (x64 edition)', '23.01.00.0'],
    ['Microsoft Edge', '124.0.2478.80'],
    ['Contoso Backup Agent', '6.3.1'],
  ] as const);
  return {
    eventId: 11707,
    level: 'information',
    provider: providers.msi,
    category: 'None',
    task: 0,
    keywords: classic,
    xmlLevel: 4,
    qualifiers: 0,
    user: system,
    data: [
      ['param1', `Product: ${product} -- Installation completed successfully.`],
      ['param2', `(NULL)`],
      ['param3', version],
    ],
    message: `Product: ${product} -- Installation completed successfully.`,
  };
};

const profileWarning: Template = ({ rng }) => ({
  eventId: 1534,
  level: 'warning',
  provider: { name: 'Microsoft-Windows-User Profiles Service', guid: '{89B1E9F0-5AFF-44A6-9B44-0A07A7CE5845}' },
  category: 'None',
  task: 0,
  keywords: classic,
  xmlLevel: 3,
  user: { sid: sidOf('jdoe'), name: `${DOMAIN}\\jdoe` },
  data: [
    ['Event', 'Create'],
    ['Context', rng.guid()],
    ['Error', 'Not implemented'],
  ],
  message:
    'Profile notification of event Create for component {2c86c843-77ae-4284-9722-27d65366543c} failed, error code is Not implemented\n.',
});

// ---- Setup -------------------------------------------------------------------------------------

/** One update: changes initiated (1), a reboot needed (4), installed (2) or failed (3). */
function servicing(kb: string, fail: boolean): EventSpec[] {
  const base = {
    provider: providers.servicing,
    category: '(1)',
    task: 1,
    keywords: '0x8000000000000000',
    user: system,
  } as const;
  return [
    {
      ...base,
      eventId: 1,
      level: 'information',
      xmlLevel: 0,
      data: [
        ['PackageIdentifier', kb],
        ['InitialPackageState', 'Absent'],
        ['IntendedPackageState', 'Installed'],
        ['Client', 'WindowsUpdateAgent'],
      ],
      message: `Initiating changes for package ${kb}. Current state is Absent. Target state is Installed. Client id: WindowsUpdateAgent.`,
    },
    ...(fail
      ? [
          {
            ...base,
            eventId: 3,
            level: 'error' as const,
            xmlLevel: 2,
            data: [
              ['PackageIdentifier', kb],
              ['ErrorCode', '0x800f0922'],
            ] as [string, string][],
            message: `Package ${kb} failed to be changed to the Installed state. Status: 0x800f0922.`,
          },
        ]
      : [
          {
            ...base,
            eventId: 4,
            level: 'information' as const,
            xmlLevel: 0,
            data: [
              ['PackageIdentifier', kb],
              ['IntendedPackageState', 'Installed'],
            ] as [string, string][],
            message: `A reboot is necessary before package ${kb} can be changed to the Installed state.`,
          },
          {
            ...base,
            eventId: 2,
            level: 'information' as const,
            xmlLevel: 0,
            data: [
              ['PackageIdentifier', kb],
              ['IntendedPackageState', 'Installed'],
              ['ErrorCode', '0x0'],
            ] as [string, string][],
            message: `Package ${kb} was successfully changed to the Installed state.`,
          },
        ]),
  ];
}

// ---- Sysmon ------------------------------------------------------------------------------------

const sysmonData = (rng: Rng, time: number, extra: [string, string][]): [string, string][] => [
  ['RuleName', '-'],
  ['UtcTime', new Date(time).toISOString().replace('T', ' ').replace('Z', '')],
  ['ProcessGuid', rng.guid()],
  ['ProcessId', String(rng.int(400, 16000))],
  ...extra,
];
const sysmonMessage = (title: string, data: [string, string][]) =>
  `${title}:\n${data.map(([k, v]) => `${k}: ${v}`).join('\n')}`;

const sysmonProcess: Template = ({ rng, time }) => {
  const image = rng.pick(processes);
  const user = rng.pick(people);
  const data = sysmonData(rng, time, [
    ['Image', image],
    ['FileVersion', '10.0.20348.1'],
    ['CommandLine', `"${image}"`],
    ['CurrentDirectory', 'C:\\Windows\\system32\\'],
    ['User', `${DOMAIN}\\${user}`],
    ['LogonId', logonId(rng)],
    ['IntegrityLevel', user === 'it-admin' ? 'High' : 'Medium'],
    ['Hashes', `SHA256=${rng.hex(64).toUpperCase()}`],
    ['ParentImage', 'C:\\Windows\\explorer.exe'],
    ['ParentCommandLine', 'C:\\Windows\\Explorer.EXE'],
  ]);
  return {
    eventId: 1,
    level: 'information',
    provider: providers.sysmon,
    category: 'Process Create (rule: ProcessCreate)',
    task: 1,
    keywords: '0x8000000000000000',
    xmlLevel: 4,
    user: system,
    data,
    message: sysmonMessage('Process Create', data),
  };
};

const sysmonNetwork: Template = ({ rng, time }) => {
  const data = sysmonData(rng, time, [
    ['Image', rng.pick(processes)],
    ['User', `${DOMAIN}\\${rng.pick(people)}`],
    ['Protocol', 'tcp'],
    ['Initiated', 'true'],
    ['SourceIp', clientIp(rng)],
    ['SourcePort', String(rng.int(49152, 65535))],
    ['DestinationIp', `${rng.int(13, 52)}.${rng.int(0, 255)}.${rng.int(0, 255)}.${rng.int(1, 254)}`],
    ['DestinationHostname', rng.pick(['outlook.office365.com', 'update.microsoft.com', 'rmm.example.net', '-'])],
    ['DestinationPort', rng.pick(['443', '443', '80', '445'])],
  ]);
  return {
    eventId: 3,
    level: 'information',
    provider: providers.sysmon,
    category: 'Network connection detected (rule: NetworkConnect)',
    task: 3,
    keywords: '0x8000000000000000',
    xmlLevel: 4,
    user: system,
    data,
    message: sysmonMessage('Network connection detected', data),
  };
};

const sysmonFile: Template = ({ rng, time }) => {
  const data = sysmonData(rng, time, [
    ['Image', rng.pick(processes)],
    ['TargetFilename', `C:\\Users\\${rng.pick(people)}\\AppData\\Local\\Temp\\${rng.hex(8)}.tmp`],
    ['CreationUtcTime', new Date(time).toISOString().replace('T', ' ').replace('Z', '')],
    ['User', `${DOMAIN}\\${rng.pick(people)}`],
  ]);
  return {
    eventId: 11,
    level: 'information',
    provider: providers.sysmon,
    category: 'File created (rule: FileCreate)',
    task: 11,
    keywords: '0x8000000000000000',
    xmlLevel: 4,
    user: system,
    data,
    message: sysmonMessage('File created', data),
  };
};

const sysmonDns: Template = ({ rng, time }) => {
  const data = sysmonData(rng, time, [
    ['QueryName', rng.pick(['login.microsoftonline.com', 'fs01.contoso.local', 'rmm.example.net', 'www.google.com'])],
    ['QueryStatus', '0'],
    ['QueryResults', `::ffff:${rng.int(13, 52)}.${rng.int(0, 255)}.${rng.int(0, 255)}.${rng.int(1, 254)};`],
    ['Image', rng.pick(processes)],
    ['User', `${DOMAIN}\\${rng.pick(people)}`],
  ]);
  return {
    eventId: 22,
    level: 'information',
    provider: providers.sysmon,
    category: 'Dns query (rule: DnsQuery)',
    task: 22,
    keywords: '0x8000000000000000',
    xmlLevel: 4,
    user: system,
    data,
    message: sysmonMessage('Dns query', data),
  };
};

// ---- The logs ----------------------------------------------------------------------------------

const logs: LogDefinition[] = [
  {
    name: 'Application',
    displayName: 'Application',
    maxSize: 20_971_520,
    retentionDays: 0,
    count: 1_400,
    templates: [
      [4, appCrash],
      [6, werReport],
      [2, dotnetCrash],
      [30, sppRestart],
      [25, esentAttach],
      [20, vssIdle],
      [4, msiInstalled],
      [3, profileWarning],
    ],
  },
  {
    name: 'System',
    displayName: 'System',
    maxSize: 20_971_520,
    retentionDays: 0,
    count: 1_200,
    templates: [
      [55, serviceState],
      [6, startType],
      [1, serviceFailed],
      [1, serviceCrashed],
      [8, dcom],
      [4, dnsTimeout],
      [0.3, badBlock],
      [3, uptime],
    ],
  },
  {
    name: 'Security',
    displayName: 'Security',
    maxSize: 134_217_728,
    retentionDays: 30,
    count: 4_000,
    templates: [
      [40, logon],
      [7, failedLogon],
      [28, logoff],
      [18, specialLogon],
      [12, processCreation],
      [0.4, lockout],
    ],
  },
  { name: 'Setup', displayName: 'Setup', maxSize: 1_052_672, retentionDays: 0, count: 0, templates: [] },
  {
    name: 'Microsoft-Windows-Sysmon/Operational',
    displayName: 'Sysmon Operational',
    maxSize: 67_108_864,
    retentionDays: 0,
    count: 2_000,
    templates: [
      [35, sysmonProcess],
      [30, sysmonNetwork],
      [15, sysmonFile],
      [25, sysmonDns],
    ],
  },
];

const DAYS = 14;

function pickWeighted(rng: Rng, templates: LogDefinition['templates']): Template {
  const total = templates.reduce((sum, [weight]) => sum + weight, 0);
  let at = rng.next() * total;
  for (const [weight, template] of templates) if ((at -= weight) < 0) return template;
  return templates[templates.length - 1]![1];
}

/**
 * Generates the store for `computer`: the same computer name and anchor give the same events
 * (the anchor, by default the start of the current hour, is the newest possible event time).
 */
export function generateEventStore(options: { computer: string; anchor?: Date; scale?: number }): EventStore {
  const computer = options.computer;
  const anchor = options.anchor?.getTime() ?? Math.floor(Date.now() / 3_600_000) * 3_600_000;
  const start = anchor - DAYS * 86_400_000;
  const scale = options.scale ?? 1;
  const records = new Map<LogDefinition, EventRecord[]>();

  for (const log of logs) {
    const rng = new Rng(`${computer}/${log.name}`);
    const specs: { time: number; spec: EventSpec }[] = [];
    const count = Math.round(log.count * scale);
    for (let i = 0; i < count; i++) {
      const time = start + Math.floor(rng.next() * (anchor - start));
      specs.push({ time, spec: pickWeighted(rng, log.templates)({ rng, computer, time }) });
    }
    // Episodes: restarts after patching (System), one power loss, and the updates themselves (Setup).
    const episode = (time: number, items: EventSpec[]) =>
      items.forEach((spec, i) => specs.push({ time: time + i * 1_500, spec }));
    if (log.name === 'System') {
      for (let day = 2; day < DAYS; day += 4) {
        const time = start + day * 86_400_000 + 3 * 3_600_000 + rng.int(0, 3_600_000);
        episode(time, restart(rng, computer, time));
      }
      episode(start + 9 * 86_400_000 + 14 * 3_600_000, crash(rng, start + 9 * 86_400_000 + 14 * 3_600_000));
    }
    if (log.name === 'Setup') {
      const kbs = [
        'KB5034439',
        'KB5034770',
        'KB5035857',
        'KB5036909',
        'KB5037422',
        'KB5037782',
        'KB890830',
        'KB2267602',
      ];
      kbs.forEach((kb, i) =>
        episode(start + (1 + (i % 4) * 4) * 86_400_000 + 2 * 3_600_000 + i * 600_000, servicing(kb, i === 5)),
      );
    }
    specs.sort((a, b) => a.time - b.time);
    const firstRecord = rng.int(1_000, 250_000);
    records.set(
      log,
      specs.map(({ time, spec }, i) => ({ log, recordId: firstRecord + i, time, spec })),
    );
  }

  const find = (name: string) => logs.find((log) => log.name.toLowerCase() === name.toLowerCase());
  const describe = (log: LogDefinition): EventLogDescriptor => {
    const list = records.get(log)!;
    const last = list[list.length - 1];
    return {
      name: log.name,
      displayName: log.displayName,
      recordCount: list.length,
      maxSize: log.maxSize,
      retentionDays: log.retentionDays,
      lastWriteTime: new Date(last?.time ?? start).toISOString(),
    };
  };
  const render = (record: EventRecord): LiveEvent => ({
    recordId: record.recordId,
    timeCreated: new Date(record.time).toISOString(),
    level: record.spec.level,
    source: record.spec.provider.name,
    eventId: record.spec.eventId,
    message: record.spec.message,
    category: record.spec.category,
    user: record.spec.user?.name ?? null,
    computer,
    rawXml: rawXml(record, computer),
  });

  return {
    computer,
    list: () => logs.map(describe),
    get: (name) => {
      const log = find(name);
      return log && describe(log);
    },
    events(name, filter) {
      const log = find(name);
      if (!log) return undefined;
      const from = filter.startTime ? Date.parse(filter.startTime) : -Infinity;
      const to = filter.endTime ? Date.parse(filter.endTime) : Infinity;
      const source = filter.source?.toLowerCase();
      const matching = records
        .get(log)!
        .filter(
          (r) =>
            r.time >= from &&
            r.time <= to &&
            (filter.level === undefined || r.spec.level === filter.level) &&
            (filter.eventId === undefined || r.spec.eventId === filter.eventId) &&
            (source === undefined || r.spec.provider.name.toLowerCase() === source),
        )
        .reverse();
      const offset = (filter.page - 1) * filter.limit;
      return { events: matching.slice(offset, offset + filter.limit).map(render), total: matching.length };
    },
    event(name, recordId) {
      const log = find(name);
      const record = log && records.get(log)!.find((r) => r.recordId === recordId);
      return record && render(record);
    },
    all: () =>
      [...records.values()]
        .flat()
        .sort((a, b) => a.time - b.time)
        .map((record) => ({ log: record.log.name, event: render(record) })),
  };
}

const xmlText = (value: string) => value.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const xmlAttribute = (value: string) => xmlText(value).replace(/"/g, '&quot;');

/** The event as `wevtutil qe /f:xml` prints it (Windows event XML schema). */
function rawXml(record: EventRecord, computer: string): string {
  const { spec } = record;
  const provider = spec.provider;
  const providerAttributes = [
    `Name="${xmlAttribute(provider.name)}"`,
    provider.guid && `Guid="${provider.guid}"`,
    provider.eventSourceName && `EventSourceName="${xmlAttribute(provider.eventSourceName)}"`,
  ]
    .filter(Boolean)
    .join(' ');
  const pid = 500 + (record.recordId % 700);
  const data = spec.data
    .map(([name, value]) =>
      value === ''
        ? `<Data Name="${xmlAttribute(name)}"/>`
        : `<Data Name="${xmlAttribute(name)}">${xmlText(value)}</Data>`,
    )
    .join('');
  return (
    `<Event xmlns="http://schemas.microsoft.com/win/2004/08/events/event"><System>` +
    `<Provider ${providerAttributes}/>` +
    `<EventID${spec.qualifiers !== undefined ? ` Qualifiers="${spec.qualifiers}"` : ''}>${spec.eventId}</EventID>` +
    `<Version>${spec.provider === providers.security && spec.eventId === 4624 ? 2 : 0}</Version><Level>${spec.xmlLevel}</Level><Task>${spec.task}</Task><Opcode>0</Opcode>` +
    `<Keywords>${spec.keywords}</Keywords><TimeCreated SystemTime="${new Date(record.time).toISOString().replace('Z', '0000Z')}"/>` +
    `<EventRecordID>${record.recordId}</EventRecordID><Correlation/><Execution ProcessID="${pid}" ThreadID="${pid + 4 * (record.recordId % 97)}"/>` +
    `<Channel>${xmlText(record.log.name)}</Channel><Computer>${xmlText(computer)}</Computer>` +
    (spec.user ? `<Security UserID="${spec.user.sid}"/>` : '<Security/>') +
    `</System><EventData>${data}</EventData></Event>`
  );
}
