import { openSecret, sealSecret } from '../auth/key-seal.ts';
import type { ParameterValue } from './parameters.ts';
import type { ScriptParameter } from './schemas.ts';

/**
 * A parameter as stored: a secret one's default is sealed (AES-256-GCM under ENROLLMENT_KEY_SEAL_KEY) in
 * `sealedDefault`, never in `default`. A `default` on a secret parameter is one stored before defaults were sealed,
 * or without a seal key: it is sealed on its first read by a run (sealClearDefaults).
 */
export type StoredParameter = ScriptParameter & { sealedDefault?: string };

function sealed(p: ScriptParameter): StoredParameter {
  const seal = p.default === undefined ? null : sealSecret(JSON.stringify(p.default));
  if (!seal) return p;
  const { default: _clear, ...rest } = p;
  return { ...rest, sealedDefault: seal };
}

/**
 * Parameters as given → as stored: a secret one's `default` is sealed. A secret one given without a default but
 * with `hasDefault: true` (as replies show it) keeps the default `previous` has for that name, so a definition read
 * and sent back keeps its secret defaults; anywhere else `hasDefault` means nothing and is not stored.
 */
export function sealParameters(given: StoredParameter[], previous: StoredParameter[] = []): StoredParameter[] {
  return given.map(({ hasDefault, ...p }) => {
    if (!p.secret) {
      const { sealedDefault: _s, ...plain } = p;
      return plain;
    }
    if (p.default !== undefined || p.sealedDefault !== undefined) return sealed(p);
    const kept = hasDefault ? previous.find((q) => q.secret && q.name === p.name) : undefined;
    if (kept?.sealedDefault !== undefined) return { ...p, sealedDefault: kept.sealedDefault };
    if (kept?.default !== undefined) return sealed({ ...p, default: kept.default });
    return p;
  });
}

/** What replies, exports and the trail show: a secret parameter says whether it has a default, never the value. */
export function publicParameters(stored: StoredParameter[]): ScriptParameter[] {
  return stored.map(({ sealedDefault, ...p }) => {
    if (!p.secret) return p;
    const { default: value, ...rest } = p;
    return { ...rest, hasDefault: value !== undefined || sealedDefault !== undefined };
  });
}

/** For a run: secret defaults opened. One that cannot be opened (no seal key, or another one) is no default. */
export function openParameters(stored: StoredParameter[]): ScriptParameter[] {
  return stored.map(({ sealedDefault, ...p }) => {
    if (sealedDefault === undefined) return p;
    const text = openSecret(sealedDefault);
    return text === undefined ? p : { ...p, default: JSON.parse(text) as ParameterValue };
  });
}

/** Whether a secret default is still stored in the clear. */
export const hasClearSecretDefault = (stored: StoredParameter[]) =>
  stored.some((p) => p.secret && p.default !== undefined);
