import { type AgentLookup, authenticateAgent } from '../auth/authenticate.ts';
import type { AgentPrincipal } from '../auth/principal.ts';
import type { Db } from '../db/db.ts';
import type { PolicyKind } from './schemas.ts';
import { selectCandidatesByToken } from './store.ts';

type Candidates = NonNullable<Awaited<ReturnType<typeof selectCandidatesByToken>>>;

/** The candidates read with an agent's token, by the principal they authenticated (one request's). */
const readWithToken = new WeakMap<AgentPrincipal, { kind: PolicyKind; found: Candidates }>();

/**
 * An agent's bearer token and its device's candidate policies of `kind`, in one statement: a route that resolves the
 * device's policies (the monitoring config of a metrics upload) reads them with the token instead of after it.
 */
export async function authenticateAgentWithPolicies(
  db: Db,
  headers: Record<string, string | undefined>,
  kind: PolicyKind,
): Promise<AgentPrincipal> {
  let found: Candidates | undefined;
  const lookup: AgentLookup = async (tx, tokenHash) => {
    found = await selectCandidatesByToken(tx, tokenHash, kind);
    return found && { agentId: found.agentId, deviceId: found.device.id, orgId: found.device.orgId };
  };
  const agent = await authenticateAgent(db, headers, lookup);
  if (found) readWithToken.set(agent, { kind, found });
  return agent;
}

/** The candidates of `kind` read with the caller's token, when its authentication read them. */
export function candidatesReadWith(caller: AgentPrincipal, kind: PolicyKind) {
  const read = readWithToken.get(caller);
  return read?.kind === kind ? read.found : undefined;
}
