/**
 * Action codes in words (device.create reads "created device"). Known codes have a phrase of their
 * own; any other code is worded by rule, so a code the viewer has never seen still reads as English.
 */
const knownActions: Readonly<Record<string, string>> = {
  // the platform's audit actions
  'user.login': 'logged in',
  'user.login.failed': 'failed login',
  'user.logout': 'logged out',
  'user.permission.change': 'changed permissions',
  'device.create': 'created device',
  'device.update': 'updated device',
  'device.delete': 'deleted device',
  'script.execute': 'ran script',
  'policy.create': 'created policy',
  'policy.update': 'updated policy',
  'policy.evaluate': 'evaluated policy',
  'automation.policy.evaluate': 'evaluated automation policy',
  'automation.run': 'ran automation',
  // a verb whose past tense doubles its last consonant
  'patch.defer': 'deferred patch',
  'alert.create': 'raised alert',
  'alert.acknowledge': 'acknowledged alert',
  'alert.notification.failed': 'failed to notify of alert',
  'alert.notification.throttled': 'throttled alert notification',
  'data.access': 'accessed data',
  'data.export': 'exported data',
  'organization.update': 'updated organization',
  'agent.eventlogs.submit': 'submitted event logs',
  'agent.source.ip.changed': 'changed source IP',
  // the service's own (docs/retention.md, docs/audit.md)
  'system.audit.retention': 'pruned expired audit rows',
  'system.audit.anchored': 'anchored the audit chain',
  'agent_logs.prune': 'pruned expired diagnostic logs',
  'device_event_logs.prune': 'pruned expired event logs',
  'log_retention.update': 'updated log retention',
};

/**
 * The verbs action codes use. A code whose last part is none of them names what the action produced
 * (`custom_field.import.definitions`): its verb is the last part that is one, and the parts after it follow the object.
 */
export const actionVerbs: ReadonlySet<string> = new Set([
  'access',
  'acknowledge',
  'add',
  'anchor',
  'assign',
  'cancel',
  'change',
  'close',
  'create',
  'delete',
  'deliver',
  'disable',
  'enable',
  'enroll',
  'evaluate',
  'execute',
  'export',
  'import',
  'invite',
  'login',
  'logout',
  'move',
  'open',
  'remove',
  'rename',
  'reopen',
  'resolve',
  'restore',
  'revoke',
  'rotate',
  'run',
  'submit',
  'unassign',
  'update',
  'upload',
  'verify',
]);

const irregularPast: Readonly<Record<string, string>> = {
  begin: 'began',
  bring: 'brought',
  build: 'built',
  buy: 'bought',
  choose: 'chose',
  do: 'did',
  find: 'found',
  forget: 'forgot',
  get: 'got',
  give: 'gave',
  go: 'went',
  hide: 'hid',
  hold: 'held',
  keep: 'kept',
  lose: 'lost',
  make: 'made',
  put: 'put',
  read: 'read',
  rebuild: 'rebuilt',
  reset: 'reset',
  run: 'ran',
  rerun: 'reran',
  see: 'saw',
  send: 'sent',
  resend: 'resent',
  set: 'set',
  shut: 'shut',
  take: 'took',
  undo: 'undid',
  write: 'wrote',
  rewrite: 'rewrote',
  cut: 'cut',
  quit: 'quit',
  wake: 'woke',
  wakeup: 'woke up',
  shutdown: 'shut down',
  login: 'logged in',
  logout: 'logged out',
  signin: 'signed in',
  signout: 'signed out',
  signup: 'signed up',
  setup: 'set up',
};

/** Verbs of more than one syllable whose last consonant doubles before -ed (one-syllable verbs follow a rule). */
const doubling = new Set([
  'admit',
  'commit',
  'emit',
  'omit',
  'permit',
  'submit',
  'transfer',
  'unpin',
  'unplug',
  'untag',
]);

/** One syllable ending in one vowel and one consonant doubles it: stop → stopped, chat → chatted (not fix, show, play). */
const doublesByRule = (verb: string) => /^[^aeiou]*[aeiou][^aeiouwxy]$/.test(verb);

/** Base forms of verbs that are written as one word in codes. */
const baseForms: Readonly<Record<string, string>> = {
  login: 'log in',
  logout: 'log out',
  signin: 'sign in',
  signout: 'sign out',
  signup: 'sign up',
  setup: 'set up',
  shutdown: 'shut down',
  wakeup: 'wake up',
};

/** Verbs whose subject is the actor itself: `api_key.login.failed` is "failed to log in", not "failed to log in API key". */
const actorVerbs = new Set(['login', 'logout', 'signin', 'signout', 'signup']);

/** Words written in capitals or otherwise than their code. */
const wordForms: Readonly<Record<string, string>> = {
  ai: 'AI',
  api: 'API',
  cpu: 'CPU',
  csv: 'CSV',
  dns: 'DNS',
  eventlogs: 'event logs',
  id: 'ID',
  ip: 'IP',
  json: 'JSON',
  mfa: 'MFA',
  os: 'OS',
  psa: 'PSA',
  rmm: 'RMM',
  sms: 'SMS',
  sso: 'SSO',
  url: 'URL',
  vpn: 'VPN',
  ws: 'WebSocket',
};

/** Irregular past forms a code may end in (`device.connection.lost`). */
const irregularPastForms = new Set(Object.values(irregularPast).filter((form) => !form.includes(' ')));

/** Endings that report an outcome rather than the action itself. */
const refusals = new Set(['denied', 'rejected', 'blocked', 'refused', 'forbidden']);

export function pastTense(verb: string): string {
  const irregular = irregularPast[verb];
  if (irregular) return irregular;
  if (doubling.has(verb) || doublesByRule(verb)) return `${verb}${verb.at(-1)}ed`;
  if (verb.endsWith('e')) return `${verb}d`;
  if (/[^aeiou]y$/.test(verb)) return `${verb.slice(0, -1)}ied`;
  return `${verb}ed`;
}

/** The words of one part of a code: snake_case, kebab-case and camelCase split, known words in their usual form. */
function words(part: string): string[] {
  return part
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .split(/[\s_-]+/)
    .filter(Boolean)
    .map((word) => wordForms[word.toLowerCase()] ?? word.toLowerCase());
}

/** A code or a part of one in words: `audit_log` → audit log, `api_key` → API key. */
export function codeWords(code: string): string {
  return words(code).join(' ');
}

/** "<verb> <object>" of the parts, the verb as `form` shapes it: `policy.assign` → assigned policy. */
function phrase(parts: string[], form: (verb: string) => string): string {
  const verbPart = parts.at(-1)!;
  const [verb = '', ...verbRest] = words(verbPart);
  const object = actorVerbs.has(verb.toLowerCase()) ? [] : parts.slice(0, -1).flatMap(words);
  return [form(verb.toLowerCase()), ...object, ...verbRest].join(' ');
}

export function humanizeAction(action: string): string {
  const known = knownActions[action];
  if (known) return known;
  const parts = action.split('.').filter(Boolean);
  if (parts.length === 0) return action;
  const last = parts.at(-1)!.toLowerCase();
  const rest = parts.slice(0, -1);
  if (last === 'failed' && rest.length > 0) return `failed to ${phrase(rest, (verb) => baseForms[verb] ?? verb)}`;
  if (refusals.has(last) && rest.length > 0)
    return `tried to ${phrase(rest, (verb) => baseForms[verb] ?? verb)} (${last})`;
  if (last === 'succeeded' && rest.length > 0) return phrase(rest, pastTense);
  const verbAt = parts.findLastIndex((part) => actionVerbs.has(part.toLowerCase()));
  // `custom_field.import.definitions`: imported custom field definitions.
  if (verbAt >= 0 && verbAt < parts.length - 1)
    return [
      pastTense(parts[verbAt]!.toLowerCase()),
      ...[...parts.slice(0, verbAt), ...parts.slice(verbAt + 1)].flatMap(words),
    ].join(' ');
  // Already in the past (`agent.source.ip.changed`): the verb leads, as in any other phrase.
  if ((last.endsWith('ed') || irregularPastForms.has(last)) && rest.length > 0) return phrase(parts, (verb) => verb);
  return phrase(parts, pastTense);
}

/** Every known code with its phrase, for the action filter's suggestions. */
export function knownActionPhrases(): [code: string, phrase: string][] {
  return Object.entries(knownActions);
}
