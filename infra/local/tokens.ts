import { SignJWT } from 'jose';
import type { UserClaims } from '#shared/auth/jwt.ts';
import { jwtDefaults } from '#shared/auth/jwt.ts';

/**
 * Signs a local HS256 user token with JWT_SECRET (local server demo tokens and tests;
 * in AWS the identity provider issues tokens and the API only verifies them).
 */
export function signUserToken(
  claims: UserClaims,
  options: { expiresIn?: string | number; secret?: string } = {},
): Promise<string> {
  const secret = options.secret ?? process.env.JWT_SECRET;
  if (!secret) throw new Error('JWT_SECRET is not set');
  const { sub, ...rest } = claims;
  return new SignJWT(rest)
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject(sub)
    .setIssuer(process.env.JWT_ISSUER || jwtDefaults.issuer)
    .setAudience(process.env.JWT_AUDIENCE || jwtDefaults.audience)
    .setIssuedAt()
    .setExpirationTime(options.expiresIn ?? '1h')
    .sign(new TextEncoder().encode(secret));
}
