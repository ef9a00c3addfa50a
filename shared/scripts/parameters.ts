import { ValidationFailed } from '../errors.ts';
import { parameterIssue, type ScriptParameter } from './schemas.ts';

export type ParameterValue = string | number | boolean;

/** A run's parameter values: every one for the agent, and apart the ones a run record may keep. */
export interface ResolvedParameters {
  values: Record<string, ParameterValue>;
  /** Without secret values. */
  stored: Record<string, ParameterValue>;
  secrets: Record<string, ParameterValue>;
}

/**
 * Checks the given values against the declared parameters before anything is sent: an unknown name, a
 * missing required value or a wrong type is a 400 naming `body.parameters.<name>`. Defaults fill what is not given.
 */
export function resolveParameters(declared: ScriptParameter[], given: Record<string, unknown>): ResolvedParameters {
  const issues: { path: string; message: string; code: string }[] = [];
  const byName = new Map(declared.map((p) => [p.name, p]));
  for (const name of Object.keys(given))
    if (!byName.has(name))
      issues.push({ path: `body.parameters.${name}`, message: `Unknown parameter ${name}`, code: 'unrecognized_keys' });
  const resolved: ResolvedParameters = { values: {}, stored: {}, secrets: {} };
  for (const p of declared) {
    const value = given[p.name] ?? p.default;
    if (value === undefined || value === null) {
      if (p.required)
        issues.push({
          path: `body.parameters.${p.name}`,
          message: `Parameter ${p.name} is required`,
          code: 'invalid_type',
        });
      continue;
    }
    const issue = parameterIssue(p, value);
    if (issue) {
      issues.push({ path: `body.parameters.${p.name}`, message: issue, code: 'invalid_type' });
      continue;
    }
    resolved.values[p.name] = value as ParameterValue;
    (p.secret ? resolved.secrets : resolved.stored)[p.name] = value as ParameterValue;
  }
  if (issues.length > 0) throw ValidationFailed('Invalid script parameters', issues);
  return resolved;
}
