import type { Row } from './entries.ts';

const actorTypeLabels: Record<Row['actorType'], string> = {
  user: 'User',
  api_key: 'API key',
  agent: 'Device agent',
  system: 'System',
  ai_agent: 'AI agent',
};

export const actorTypeLabel = (row: Pick<Row, 'actorType'>) => actorTypeLabels[row.actorType] ?? row.actorType;

/**
 * Who acted, as two lines: a name to read, and what kind of actor it is. An agent is its device's hostname, as
 * the device is named now, else as it was named when the row was written.
 */
export function actorLines(row: Row): { primary: string; secondary: string } {
  const { name, email } = row.actor;
  switch (row.actorType) {
    case 'agent':
      return { primary: row.actorHostname || name || 'Unknown device', secondary: actorTypeLabel(row) };
    case 'user':
      return { primary: name || email || 'Unknown user', secondary: name ? email : '' };
    case 'system':
      return { primary: name || 'System', secondary: 'Platform' };
    default:
      return { primary: name || email || actorTypeLabel(row), secondary: actorTypeLabel(row) };
  }
}

export const resultLabels: Record<Row['result'], string> = { success: 'Success', failure: 'Failed', denied: 'Denied' };
