/**
 * The simulated agent's monitoring, as docs/monitoring.md describes the protocol: after each heartbeat whose reply
 * names a config version it does not hold, it fetches GET /agents/{id}/config (keeping its last config when that
 * fails); it sends its metric samples (PUT /agents/{id}/metrics) and the results of the service and process checks of
 * its config (POST /agents/{id}/check-results). The machine's values are settable, so tests and demos drive every
 * transition of a monitor.
 */

/** What the simulated machine measures; change the fields while the agent runs. */
export interface Machine {
  cpuPercent: number;
  memoryPercent: number;
  /** Per volume (`C:`, `/`): free space in percent and bytes. */
  disks: Record<string, { freePercent: number; freeBytes: number }>;
  /** Services by name: running or stopped. Absent: stopped. */
  services: Record<string, 'running' | 'stopped'>;
  /** Names of the processes running. */
  processes: Set<string>;
}

export const defaultMachine = (): Machine => ({
  cpuPercent: 12,
  memoryPercent: 41,
  disks: { 'C:': { freePercent: 63, freeBytes: 160 * 1024 ** 3 } },
  services: { Spooler: 'running', wuauserv: 'running', WinDefend: 'running' },
  processes: new Set(['explorer.exe', 'svchost.exe', 'MsMpEng.exe']),
});

type ConfigItem = { key: string; type: string; name?: string; expect?: string };
type Call = (method: string, suffix: string, body?: unknown) => Promise<unknown>;

export function monitoring(machine: Machine, call: Call, log: (line: string) => void) {
  let version: string | undefined;
  let items: ConfigItem[] = [];

  const refresh = async (configVersion: string | undefined) => {
    if (!configVersion || configVersion === version) return;
    try {
      const config = (await call('GET', '/config')) as { configVersion: string; monitoring: ConfigItem[] };
      items = config.monitoring;
      version = config.configVersion;
      log(`monitoring config ${version}: ${items.length} item(s)`);
    } catch (error) {
      log(`config fetch failed, keeping config ${version ?? '(none)'}: ${String(error)}`);
    }
  };

  const samples = (timestamp: string) => [
    { metric: 'cpu.percent', value: machine.cpuPercent, timestamp },
    { metric: 'memory.percent', value: machine.memoryPercent, timestamp },
    ...Object.entries(machine.disks).flatMap(([volume, disk]) => [
      { metric: 'disk.freePercent', volume, value: disk.freePercent, timestamp },
      { metric: 'disk.freeBytes', volume, value: disk.freeBytes, timestamp },
    ]),
  ];

  const checks = (timestamp: string) =>
    items.flatMap((item) => {
      if (item.type === 'service') {
        const state = machine.services[item.name ?? ''] ?? 'stopped';
        return [
          {
            itemKey: item.key,
            status: state === item.expect ? 'pass' : 'fail',
            output: `${item.name} is ${state}`,
            timestamp,
          },
        ];
      }
      if (item.type === 'process') {
        const present = machine.processes.has(item.name ?? '');
        const passed = present === (item.expect === 'present');
        return [
          {
            itemKey: item.key,
            status: passed ? 'pass' : 'fail',
            output: `${item.name} is ${present ? 'running' : 'not running'}`,
            timestamp,
          },
        ];
      }
      return [];
    });

  return {
    /** After a heartbeat: the config if it changed, then this minute's samples and checks. */
    async report(configVersion: string | undefined) {
      await refresh(configVersion);
      const timestamp = new Date().toISOString();
      await call('PUT', '/metrics', { samples: samples(timestamp) });
      const results = checks(timestamp);
      if (results.length > 0) await call('POST', '/check-results', { results });
    },
    get configVersion() {
      return version;
    },
  };
}
