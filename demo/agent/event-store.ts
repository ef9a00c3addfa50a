/**
 * The simulated agent's Windows event logs, two weeks deep, laid out from the samples of windows-events.json:
 * Application, System, Security, Setup and Sysmon's Operational channel, with restarts after patching, one power
 * loss and the updates themselves. The same hostname and anchor time give the same store; rawXml follows the
 * Windows event XML schema.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
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

export interface EventStore {
  computer: string;
  list(): EventLogDescriptor[];
  get(name: string): EventLogDescriptor | undefined;
  events(name: string, filter: LiveEventFilter): { events: LiveEvent[]; total: number } | undefined;
  event(name: string, recordId: number): LiveEvent | undefined;
  /** Every record with its log's name, oldest first (for submitting stored event logs). */
  all(): { log: string; event: LiveEvent }[];
}

/**
 * One event of the fixture. Its texts hold `{computer}`, `{host}` (the computer's first label in capitals) and
 * `{t±ms:format}`, a time relative to the event's own.
 */
interface EventSample {
  eventId: number;
  level: LiveEventLevel;
  provider: string;
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

interface LogDefinition {
  name: string;
  displayName: string;
  maxSize: number;
  retentionDays: number;
  /** Background events over the window, drawn from the templates by weight. */
  count: number;
  templates: { weight: number; samples: EventSample[] }[];
}

interface Fixture {
  providers: Record<string, { name: string; guid?: string; eventSourceName?: string }>;
  logs: LogDefinition[];
  episodes: { restart: EventSample[]; crash: EventSample[]; updates: EventSample[][] };
}

const fixture = JSON.parse(readFileSync(new URL('./windows-events.json', import.meta.url), 'utf8')) as Fixture;

/** One stored record; message and rawXml are rendered when asked for. */
interface EventRecord {
  log: LogDefinition;
  recordId: number;
  time: number;
  sample: EventSample;
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
}

const day = 86_400_000;
const hour = 3_600_000;
const days = 14;

function pickWeighted(rng: Rng, templates: LogDefinition['templates']): EventSample {
  const total = templates.reduce((sum, { weight }) => sum + weight, 0);
  let at = rng.next() * total;
  for (const template of templates) {
    at -= template.weight;
    if (at < 0) return rng.pick(template.samples);
  }
  return rng.pick(templates.at(-1)!.samples);
}

const timeFormats: Record<string, (iso: string) => string> = {
  iso: (iso) => iso,
  isoSeconds: (iso) => iso.replace(/\.\d+Z$/, 'Z'),
  sysmon: (iso) => iso.replace('T', ' ').replace('Z', ''),
  date: (iso) => iso.slice(0, 10),
  clock: (iso) => iso.slice(11, 19),
};

/** A sample's text for this computer at this time. */
function fill(text: string, computer: string, time: number): string {
  return text.replace(/\{(computer|host)\}|\{t([+-]\d+):(\w+)\}/g, (_, name, offset, format) => {
    if (name === 'computer') return computer;
    if (name === 'host') return computer.split('.')[0]!.toUpperCase();
    return timeFormats[format]!(new Date(time + Number(offset)).toISOString());
  });
}

/**
 * Lays out the store for `computer`: the same computer name and anchor give the same events
 * (the anchor, by default the start of the current hour, is the newest possible event time).
 */
export function generateEventStore(options: { computer: string; anchor?: Date; scale?: number }): EventStore {
  const computer = options.computer;
  const anchor = options.anchor?.getTime() ?? Math.floor(Date.now() / hour) * hour;
  const start = anchor - days * day;
  const scale = options.scale ?? 1;
  const records = new Map<LogDefinition, EventRecord[]>();

  for (const log of fixture.logs) {
    const rng = new Rng(`${computer}/${log.name}`);
    const placed: { time: number; sample: EventSample }[] = [];
    const count = Math.round(log.count * scale);
    for (let i = 0; i < count; i++)
      placed.push({
        time: start + Math.floor(rng.next() * (anchor - start)),
        sample: pickWeighted(rng, log.templates),
      });
    const episode = (time: number, samples: EventSample[]) => {
      for (const [i, sample] of samples.entries()) placed.push({ time: time + i * 1_500, sample });
    };
    // Episodes: restarts after patching every four days and one power loss (System), the updates (Setup).
    if (log.name === 'System') {
      for (let at = 2; at < days; at += 4)
        episode(start + at * day + 3 * hour + rng.int(0, hour), fixture.episodes.restart);
      episode(start + 9 * day + 14 * hour, fixture.episodes.crash);
    }
    if (log.name === 'Setup') {
      for (const [i, update] of fixture.episodes.updates.entries())
        episode(start + (1 + (i % 4) * 4) * day + 2 * hour + i * 600_000, update);
    }
    placed.sort((a, b) => a.time - b.time);
    const firstRecord = rng.int(1_000, 250_000);
    records.set(
      log,
      placed.map(({ time, sample }, i) => ({ log, recordId: firstRecord + i, time, sample })),
    );
  }

  const find = (name: string) => fixture.logs.find((log) => log.name.toLowerCase() === name.toLowerCase());
  const describe = (log: LogDefinition): EventLogDescriptor => {
    const list = records.get(log)!;
    return {
      name: log.name,
      displayName: log.displayName,
      recordCount: list.length,
      maxSize: log.maxSize,
      retentionDays: log.retentionDays,
      lastWriteTime: new Date(list.at(-1)?.time ?? start).toISOString(),
    };
  };
  const render = ({ sample, time, recordId, log }: EventRecord): LiveEvent => {
    const data = sample.data.map(([name, value]): [string, string] => [name, fill(value, computer, time)]);
    return {
      recordId,
      timeCreated: new Date(time).toISOString(),
      level: sample.level,
      source: sample.provider,
      eventId: sample.eventId,
      message: fill(sample.message, computer, time),
      category: sample.category,
      user: sample.user?.name ?? null,
      computer,
      rawXml: rawXml(sample, data, { recordId, time, log: log.name, computer }),
    };
  };

  return {
    computer,
    list: () => fixture.logs.map(describe),
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
            (filter.level === undefined || r.sample.level === filter.level) &&
            (filter.eventId === undefined || r.sample.eventId === filter.eventId) &&
            (source === undefined || r.sample.provider.toLowerCase() === source),
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
function rawXml(
  sample: EventSample,
  data: [string, string][],
  at: { recordId: number; time: number; log: string; computer: string },
): string {
  const provider = fixture.providers[sample.provider]!;
  const providerAttributes = [
    `Name="${xmlAttribute(provider.name)}"`,
    provider.guid && `Guid="${provider.guid}"`,
    provider.eventSourceName && `EventSourceName="${xmlAttribute(provider.eventSourceName)}"`,
  ]
    .filter(Boolean)
    .join(' ');
  const pid = 500 + (at.recordId % 700);
  const fields = data
    .map(([name, value]) =>
      value === ''
        ? `<Data Name="${xmlAttribute(name)}"/>`
        : `<Data Name="${xmlAttribute(name)}">${xmlText(value)}</Data>`,
    )
    .join('');
  // A successful logon (4624) is version 2 of its event; every other event here is version 0.
  const version = sample.provider === 'Microsoft-Windows-Security-Auditing' && sample.eventId === 4624 ? 2 : 0;
  return (
    `<Event xmlns="http://schemas.microsoft.com/win/2004/08/events/event"><System>` +
    `<Provider ${providerAttributes}/>` +
    `<EventID${sample.qualifiers !== undefined ? ` Qualifiers="${sample.qualifiers}"` : ''}>${sample.eventId}</EventID>` +
    `<Version>${version}</Version><Level>${sample.xmlLevel}</Level><Task>${sample.task}</Task><Opcode>0</Opcode>` +
    `<Keywords>${sample.keywords}</Keywords><TimeCreated SystemTime="${new Date(at.time).toISOString().replace('Z', '0000Z')}"/>` +
    `<EventRecordID>${at.recordId}</EventRecordID><Correlation/><Execution ProcessID="${pid}" ThreadID="${pid + 4 * (at.recordId % 97)}"/>` +
    `<Channel>${xmlText(at.log)}</Channel><Computer>${xmlText(at.computer)}</Computer>` +
    (sample.user ? `<Security UserID="${sample.user.sid}"/>` : '<Security/>') +
    `</System><EventData>${fields}</EventData></Event>`
  );
}
