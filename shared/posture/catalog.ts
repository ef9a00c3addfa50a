/**
 * The product catalogue agents detect other management software with, served to agents by
 * GET /agents/{id}/posture-catalog so detection rules change without an agent release. Per platform: the service
 * (Windows service, launchd label, systemd unit) and process names whose presence means `installed` and whose
 * running means `active`. Sources and how each name was checked: docs/posture.md.
 */
export const postureCategories = [
  'rmm',
  'remote-access',
  'mdm',
  'endpoint-security',
  'backup',
  'patch-management',
  'monitoring',
] as const;
export type PostureCategory = (typeof postureCategories)[number];

export const postureStatuses = ['active', 'installed'] as const;
export type PostureStatus = (typeof postureStatuses)[number];

export interface PlatformSignature {
  services: readonly string[];
  processes: readonly string[];
}

export interface CatalogProduct {
  name: string;
  vendor: string;
  category: PostureCategory;
  windows: PlatformSignature;
  macos: PlatformSignature;
  linux: PlatformSignature;
}

/** Bumped whenever an entry changes, so an agent knows its cached copy is current. */
export const catalogVersion = '2026-11-23.1';

export const postureCatalog: readonly CatalogProduct[] = [
  {
    name: 'Datto RMM',
    vendor: 'Kaseya (Datto)',
    category: 'rmm',
    windows: { services: ['CagService'], processes: ['CagService.exe', 'AEMAgent.exe', 'RMM.WebRemote.exe'] },
    macos: { services: ['com.centrastage.cag'], processes: ['AEMAgent', 'CagService'] },
    linux: { services: ['cagservice'], processes: ['AEMAgent', 'CagService'] },
  },
  {
    name: 'NinjaOne',
    vendor: 'NinjaOne',
    category: 'rmm',
    windows: { services: ['NinjaRMMAgent'], processes: ['NinjaRMMAgent.exe', 'NinjaRMMAgentPatcher.exe'] },
    macos: { services: ['com.ninjarmm.agent'], processes: ['ninjarmm-macagent'] },
    linux: { services: ['ninjarmm-agent'], processes: ['ninjarmm-linagent'] },
  },
  {
    name: 'ConnectWise Automate',
    vendor: 'ConnectWise',
    category: 'rmm',
    windows: { services: ['LTService', 'LTSvcMon'], processes: ['LTSVC.exe', 'LTSvcMon.exe', 'LTTray.exe'] },
    macos: { services: ['com.labtechsoftware.LTSvc'], processes: ['ltechagent'] },
    linux: { services: ['ltechagent'], processes: ['ltechagent'] },
  },
  {
    name: 'ConnectWise ScreenConnect',
    vendor: 'ConnectWise',
    category: 'remote-access',
    // The service name carries the instance's thumbprint: "ScreenConnect Client (0123abcd…)"; matched by prefix.
    windows: {
      services: ['ScreenConnect Client*'],
      processes: ['ScreenConnect.ClientService.exe', 'ScreenConnect.WindowsClient.exe'],
    },
    macos: { services: ['connectwisecontrol-*', 'screenconnect-*'], processes: ['ScreenConnect.ClientService'] },
    linux: { services: ['connectwisecontrol-*', 'screenconnect-*'], processes: ['ScreenConnect.ClientService'] },
  },
  {
    name: 'Kaseya VSA',
    vendor: 'Kaseya',
    category: 'rmm',
    windows: {
      services: ['Kaseya Agent*', 'VSAX'],
      processes: ['AgentMon.exe', 'KaseyaRemoteControlHost.exe', 'PCMonitorSrv.exe'],
    },
    macos: { services: ['com.kaseya.agentmon*', 'com.kaseya.vsax'], processes: ['agentmon', 'pcmonitormanager'] },
    linux: { services: ['kaseya*', 'pcmonitor'], processes: ['agentmon', 'pcmonitormanager'] },
  },
  {
    name: 'N-able N-central',
    vendor: 'N-able',
    category: 'rmm',
    windows: {
      services: ['Windows Agent Service', 'Windows Agent Maintenance Service'],
      processes: ['agent.exe', 'AgentMaint.exe'],
    },
    macos: { services: ['com.n-able.agent-macos'], processes: ['nagent'] },
    linux: { services: ['nagent'], processes: ['nagent'] },
  },
  {
    name: 'N-able N-sight',
    vendor: 'N-able',
    category: 'rmm',
    windows: { services: ['Advanced Monitoring Agent'], processes: ['winagent.exe'] },
    macos: { services: ['com.solarwinds.agent'], processes: ['agent'] },
    linux: { services: ['agent'], processes: ['agent'] },
  },
  {
    name: 'Atera',
    vendor: 'Atera',
    category: 'rmm',
    windows: { services: ['AteraAgent'], processes: ['AteraAgent.exe'] },
    macos: { services: ['com.atera.ateraagent'], processes: ['AteraAgent'] },
    linux: { services: ['atera-agent'], processes: ['AteraAgent'] },
  },
  {
    name: 'Syncro',
    vendor: 'Syncro',
    category: 'rmm',
    windows: { services: ['Syncro'], processes: ['Syncro.Service.exe', 'Syncro.App.Runner.exe'] },
    macos: { services: ['com.syncro.agent'], processes: ['Syncro'] },
    linux: { services: ['syncro'], processes: ['syncro'] },
  },
  {
    name: 'Tactical RMM',
    vendor: 'AmidaWare',
    category: 'rmm',
    windows: { services: ['tacticalrmm'], processes: ['tacticalrmm.exe'] },
    macos: { services: ['tacticalagent'], processes: ['tacticalagent'] },
    linux: { services: ['tacticalagent'], processes: ['tacticalagent'] },
  },
  {
    name: 'MeshCentral',
    vendor: 'MeshCentral',
    category: 'remote-access',
    windows: { services: ['Mesh Agent'], processes: ['MeshAgent.exe'] },
    macos: { services: ['meshagent'], processes: ['meshagent'] },
    linux: { services: ['meshagent'], processes: ['meshagent'] },
  },
  {
    name: 'TeamViewer',
    vendor: 'TeamViewer',
    category: 'remote-access',
    windows: { services: ['TeamViewer'], processes: ['TeamViewer_Service.exe', 'TeamViewer.exe'] },
    macos: { services: ['com.teamviewer.service', 'com.teamviewer.teamviewer_service'], processes: ['TeamViewer'] },
    linux: { services: ['teamviewerd'], processes: ['teamviewerd'] },
  },
  {
    name: 'AnyDesk',
    vendor: 'AnyDesk',
    category: 'remote-access',
    windows: { services: ['AnyDesk'], processes: ['AnyDesk.exe'] },
    macos: { services: ['com.philandro.anydesk.service'], processes: ['AnyDesk'] },
    linux: { services: ['anydesk'], processes: ['anydesk'] },
  },
  {
    name: 'Splashtop',
    vendor: 'Splashtop',
    category: 'remote-access',
    windows: { services: ['SplashtopRemoteService'], processes: ['SRService.exe', 'SRManager.exe', 'SRAgent.exe'] },
    macos: { services: ['com.splashtop.streamer-daemon'], processes: ['Splashtop Streamer'] },
    linux: { services: ['SRStreamer'], processes: ['SRStreamer'] },
  },
];
