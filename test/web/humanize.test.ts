import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { humanizeAction, knownActionPhrases, pastTense } from '../../web/src/humanize.ts';

/** Every audit action the service writes, with how the viewer reads it. */
const catalogue: [code: string, phrase: string][] = [
  ['agent.eventlogs.submit', 'submitted event logs'],
  ['agent.source.ip.changed', 'changed source IP'],
  ['agent_logs.prune', 'pruned expired diagnostic logs'],
  ['alert.acknowledge', 'acknowledged alert'],
  ['alert.create', 'raised alert'],
  ['alert.notification.failed', 'failed to notify of alert'],
  ['alert.notification.throttled', 'throttled alert notification'],
  ['alert.resolve', 'resolved alert'],
  ['alert_binding.update', 'updated alert binding'],
  ['api_key.create', 'created API key'],
  ['api_key.revoke', 'revoked API key'],
  ['audit_stream.create', 'created audit stream'],
  ['audit_stream.delete', 'deleted audit stream'],
  ['audit_stream.replay', 'replayed audit stream'],
  ['audit_stream.test', 'tested audit stream'],
  ['audit_stream.update', 'updated audit stream'],
  ['automation.policy.evaluate', 'evaluated automation policy'],
  ['automation.run', 'ran automation'],
  ['billing_profile.update', 'updated billing profile'],
  ['contact.create', 'created contact'],
  ['contact.delete', 'deleted contact'],
  ['contact.import', 'imported contact'],
  ['contact.update', 'updated contact'],
  ['contract.cancel', 'canceled contract'],
  ['contract.create', 'created contract'],
  ['contract.pause', 'paused contract'],
  ['contract.resume', 'resumed contract'],
  ['contract.update', 'updated contract'],
  ['custom_field.create', 'created custom field'],
  ['custom_field.delete', 'deleted custom field'],
  ['custom_field.import.definitions', 'imported custom field definitions'],
  ['custom_field.import.values', 'imported custom field values'],
  ['custom_field.update', 'updated custom field'],
  ['data.access', 'accessed data'],
  ['data.export', 'exported data'],
  ['device.create', 'created device'],
  ['device.delete', 'deleted device'],
  ['device.posture.changed', 'changed device posture'],
  ['device.update', 'updated device'],
  ['device_event_logs.prune', 'pruned expired event logs'],
  ['device_group.create', 'created device group'],
  ['device_group.delete', 'deleted device group'],
  ['device_group.import', 'imported device group'],
  ['device_group.member.add', 'added device group member'],
  ['device_group.member.remove', 'removed device group member'],
  ['device_group.update', 'updated device group'],
  ['enrollment_key.create', 'created enrollment key'],
  ['enrollment_key.revoke', 'revoked enrollment key'],
  ['escalation_policy.create', 'created escalation policy'],
  ['escalation_policy.delete', 'deleted escalation policy'],
  ['escalation_policy.update', 'updated escalation policy'],
  ['integration.create', 'created integration'],
  ['integration.delete', 'deleted integration'],
  ['integration.update', 'updated integration'],
  ['invoice.credit', 'credited invoice'],
  ['invoice.generate', 'generated invoice'],
  ['invoice.issue', 'issued invoice'],
  ['invoice.void', 'voided invoice'],
  ['log_retention.update', 'updated log retention'],
  ['maintenance.create', 'created maintenance'],
  ['maintenance.delete', 'deleted maintenance'],
  ['maintenance.end', 'ended maintenance'],
  ['maintenance.start', 'started maintenance'],
  ['maintenance.update', 'updated maintenance'],
  ['notification_channel.create', 'created notification channel'],
  ['notification_channel.delete', 'deleted notification channel'],
  ['notification_channel.update', 'updated notification channel'],
  ['notification_defaults.update', 'updated notification defaults'],
  ['organization.create', 'created organization'],
  ['organization.delete', 'deleted organization'],
  ['organization.import', 'imported organization'],
  ['organization.reconciliation.upload', 'uploaded organization reconciliation'],
  ['organization.update', 'updated organization'],
  ['patch.approve', 'approved patch'],
  ['patch.decline', 'declined patch'],
  ['patch.defer', 'deferred patch'],
  ['patch.install', 'installed patch'],
  ['patch.ring.pause', 'paused patch ring'],
  ['patch.ring.promote', 'promoted patch ring'],
  ['patch.ring.resume', 'resumed patch ring'],
  ['patch.ring.run', 'ran patch ring'],
  ['policy.assign', 'assigned policy'],
  ['policy.create', 'created policy'],
  ['policy.delete', 'deleted policy'],
  ['policy.evaluate', 'evaluated policy'],
  ['policy.update', 'updated policy'],
  ['script.create', 'created script'],
  ['script.delete', 'deleted script'],
  ['script.execute', 'ran script'],
  ['script.import', 'imported script'],
  ['script.update', 'updated script'],
  ['site.create', 'created site'],
  ['site.delete', 'deleted site'],
  ['site.update', 'updated site'],
  ['system.audit.anchored', 'anchored the audit chain'],
  ['system.audit.retention', 'pruned expired audit rows'],
  ['ticket.close', 'closed ticket'],
  ['ticket.create', 'created ticket'],
  ['user.create', 'created user'],
  ['user.delete', 'deleted user'],
  ['user.login', 'logged in'],
  ['user.login.failed', 'failed login'],
  ['user.logout', 'logged out'],
  ['user.permission.change', 'changed permissions'],
];

/** The action codes the service's code writes as `action: '…'`. */
function writtenActions(): string[] {
  const files = ['shared', 'functions'].flatMap((root) =>
    readdirSync(root, { recursive: true, encoding: 'utf8' })
      .filter((name) => name.endsWith('.ts'))
      .map((name) => join(root, name)),
  );
  const codes = files.flatMap((file) =>
    [...readFileSync(file, 'utf8').matchAll(/\baction: '([a-z_]+(?:\.[a-z_]+)+)'/g)].map((match) => match[1]!),
  );
  return [...new Set(codes)].sort();
}

describe('the action catalogue', () => {
  it.each(catalogue)('%s reads "%s"', (code, phrase) => {
    expect(humanizeAction(code)).toBe(phrase);
  });

  it('holds every action the service writes', () => {
    const known = new Set(catalogue.map(([code]) => code));
    expect(writtenActions().filter((code) => !known.has(code))).toEqual([]);
  });
});

describe('the viewer words action codes', () => {
  it.each([
    ['device.create', 'created device'],
    ['device.update', 'updated device'],
    ['device.delete', 'deleted device'],
    ['user.login', 'logged in'],
    ['user.login.failed', 'failed login'],
    ['user.logout', 'logged out'],
    ['user.permission.change', 'changed permissions'],
    ['script.execute', 'ran script'],
    ['policy.evaluate', 'evaluated policy'],
    ['automation.policy.evaluate', 'evaluated automation policy'],
    ['alert.acknowledge', 'acknowledged alert'],
    ['data.export', 'exported data'],
    ['agent.eventlogs.submit', 'submitted event logs'],
    ['agent.source.ip.changed', 'changed source IP'],
    ['system.audit.retention', 'pruned expired audit rows'],
  ])('%s reads "%s"', (code, phrase) => {
    expect(humanizeAction(code)).toBe(phrase);
  });

  it('has a phrase for every action the specification names in section 6', () => {
    const seedActions = [
      'user.login',
      'user.login.failed',
      'user.logout',
      'user.permission.change',
      'device.create',
      'device.update',
      'device.delete',
      'script.execute',
      'policy.create',
      'policy.update',
      'policy.evaluate',
      'automation.policy.evaluate',
      'alert.create',
      'alert.acknowledge',
      'data.access',
      'data.export',
      'organization.update',
      'agent.eventlogs.submit',
      'agent.source.ip.changed',
    ];
    const known = new Map(knownActionPhrases());
    expect(seedActions.filter((code) => !known.has(code))).toEqual([]);
  });

  it.each([
    ['policy.assign', 'assigned policy'],
    ['alert.resolve', 'resolved alert'],
    ['alert.escalate', 'escalated alert'],
    ['patch.install', 'installed patch'],
    ['device.reboot', 'rebooted device'],
    ['user.mfa.reset', 'reset user MFA'],
    ['api_key.revoke', 'revoked API key'],
    ['remote_session.start', 'started remote session'],
    ['ticket.submit', 'submitted ticket'],
    ['device.tag', 'tagged device'],
    ['policy.copy', 'copied policy'],
    ['script.run', 'ran script'],
    ['backup.send', 'sent backup'],
    ['report.rebuild', 'rebuilt report'],
    ['device.setMaintenanceMode', 'set device maintenance mode'],
    ['api_key.rotate_secret', 'rotated API key secret'],
    ['user.signup', 'signed up'],
    ['device.shutdown', 'shut down device'],
  ])('words an unknown code by rule: %s reads "%s"', (code, phrase) => {
    expect(humanizeAction(code)).toBe(phrase);
  });

  it.each([
    ['script.execute.failed', 'failed to execute script'],
    ['api_key.login.failed', 'failed to log in'],
    ['user.login.blocked', 'tried to log in (blocked)'],
    ['user.login.succeeded', 'logged in'],
    ['patch.install.failed', 'failed to install patch'],
    ['script.execute.denied', 'tried to execute script (denied)'],
    ['device.wipe.blocked', 'tried to wipe device (blocked)'],
    ['device.connection.lost', 'lost device connection'],
  ])('words outcomes and past tenses: %s reads "%s"', (code, phrase) => {
    expect(humanizeAction(code)).toBe(phrase);
  });

  it('never leaves a dotted code as it was', () => {
    for (const code of ['foo.bar', 'a.b.c', 'x.y.failed', 'thing.do_it', 'reboot'])
      expect(humanizeAction(code)).not.toContain('.');
  });

  it('keeps an empty or dotless code readable', () => {
    expect(humanizeAction('')).toBe('');
    expect(humanizeAction('reboot')).toBe('rebooted');
    expect(humanizeAction('...')).toBe('...');
  });

  it.each([
    ['create', 'created'],
    ['apply', 'applied'],
    ['deploy', 'deployed'],
    ['stop', 'stopped'],
    ['chat', 'chatted'],
    ['fix', 'fixed'],
    ['show', 'showed'],
    ['edit', 'edited'],
    ['run', 'ran'],
    ['reset', 'reset'],
    ['open', 'opened'],
  ])('puts %s in the past as %s', (verb, past) => {
    expect(pastTense(verb)).toBe(past);
  });
});
