/**
 * `npm run bootstrap -- --partner "<name>" --admin-email <e-mail>`: the first partner and its administrator
 * (shared/hierarchy/bootstrap.ts), then the sign-in link. Locally against the database of `npm start` (DATABASE_URL,
 * else its embedded database); against a deployed stack through the RDS Data API with the owner's secret when
 * DB_CLUSTER_ARN is set. A second run finds both, says so, and exits 0.
 */
import { existsSync, readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { devServerPort, embeddedUrl } from '#infra/local/database.ts';
import { signUserToken } from '#infra/local/tokens.ts';
import { inviteLogin } from '#shared/auth/logins.ts';
import { createDataApiDb } from '#shared/db/data-api.ts';
import type { Db } from '#shared/db/db.ts';
import { createPgDb } from '#shared/db/pg.ts';
import { createRdsDataClient } from '#shared/db/rds-data-client.ts';
import { DomainError } from '#shared/errors.ts';
import { type Bootstrapped, bootstrapPartner } from '#shared/hierarchy/bootstrap.ts';
import { location, reason, runCommand, usageError } from './cli.ts';

const usage = `Usage:
  npm run bootstrap -- --partner "<name>" --admin-email <e-mail> [--admin-name "<name>"] [--viewer-url <url>]

  Creates the first partner (the managed service provider) and its administrator (partner_admin), unless they
  exist; prints the sign-in link.

  --viewer-url <url>  where the web pages are (the stack's ViewerUrl); locally http://localhost:$PORT/

  Sign-in: with COGNITO_USER_POOL_ID set (the stack's UserPoolId output, identity: "cognito"), the administrator's
  login is made in the pool too, which mails a temporary password (a login that exists is kept).

  Database: with DB_CLUSTER_ARN set, the RDS Data API (DB_NAME, OWNER_DB_SECRET_ARN: the owner's secret; the
  deploying role runs it once); else DATABASE_URL; else the embedded database of a running \`npm start\`.

Exit status: 0 done (or found done), 1 refused (the e-mail belongs to another user), 2 usage error or failure.`;

const { values: args, positionals } = parseArgs({
  options: {
    partner: { type: 'string' },
    'admin-email': { type: 'string' },
    'admin-name': { type: 'string' },
    'viewer-url': { type: 'string' },
  },
  strict: false,
  allowPositionals: true,
});

/** The database and how it is named in messages. */
function database(): { db: Db; where: string } {
  const resourceArn = process.env.DB_CLUSTER_ARN;
  if (resourceArn) {
    const secretArn = process.env.OWNER_DB_SECRET_ARN;
    const name = process.env.DB_NAME;
    if (!secretArn || !name) throw new Error('DB_CLUSTER_ARN is set, so OWNER_DB_SECRET_ARN and DB_NAME must be too');
    return {
      db: createDataApiDb({
        client: createRdsDataClient({ endpoint: process.env.DATA_API_ENDPOINT || undefined }),
        resourceArn,
        secretArn,
        database: name,
        resumeDeadlineMs: 60_000,
      }),
      where: `the Data API database ${name} of ${resourceArn}`,
    };
  }
  const url = process.env.DATABASE_URL || embeddedUrl(devServerPort());
  return {
    db: createPgDb({ connectionString: url, max: 1, applicationName: 'logbook-bootstrap' }),
    where: `the database at ${location(url)}${process.env.DATABASE_URL ? '' : ' (the embedded database of `npm start`: is it running?)'}`,
  };
}

/** The secret `npm start` signs local user tokens with: JWT_SECRET, else the one it keeps in .data/. */
function localJwtSecret(): string | undefined {
  if (process.env.JWT_JWKS_URL) return undefined;
  if (process.env.JWT_SECRET) return process.env.JWT_SECRET;
  return existsSync('.data/jwt-secret') ? readFileSync('.data/jwt-secret', 'utf8').trim() : undefined;
}

/** The sign-in link: locally a token of the administrator in its fragment, as `npm start` prints one. */
async function signIn(result: Bootstrapped, dataApi: boolean): Promise<string> {
  const viewer = (args['viewer-url'] as string | undefined) ?? `http://localhost:${process.env.PORT ?? 3000}/`;
  const secret = dataApi ? undefined : localJwtSecret();
  const claims = `role partner_admin, partnerId ${result.partner.id}, e-mail ${result.admin.email}`;
  if (!secret)
    return `sign in at ${viewer} with a token of your identity provider carrying ${claims} (docs/operations.md "Identity")`;
  const token = await signUserToken(
    {
      sub: result.admin.id,
      email: result.admin.email,
      ...(result.admin.name ? { name: result.admin.name } : {}),
      role: 'partner_admin',
      scope: 'partner',
      partnerId: result.partner.id,
    },
    { secret, expiresIn: '24h' },
  );
  return `sign in (valid 24 hours): ${new URL(`#token=${token}`, viewer)}`;
}

async function main(): Promise<number> {
  if (positionals.length > 0) return usageError(usage, `unexpected ${positionals.join(' ')}`);
  const partnerName = typeof args.partner === 'string' ? args.partner.trim() : '';
  const adminEmail = typeof args['admin-email'] === 'string' ? args['admin-email'].trim() : '';
  if (!partnerName) return usageError(usage, 'give --partner "<name>"');
  if (!z.email().safeParse(adminEmail).success) return usageError(usage, 'give --admin-email <an e-mail address>');
  const { db, where } = database();
  try {
    const result = await bootstrapPartner(db, {
      partnerName,
      adminEmail,
      adminName: typeof args['admin-name'] === 'string' ? args['admin-name'] : undefined,
    }).catch((error: unknown) => {
      if (error instanceof DomainError) throw error;
      throw new Error(`cannot bootstrap in ${where}: ${reason(error)}`);
    });
    const { partner, admin } = result;
    console.log(
      result.partnerCreated
        ? `partner "${partner.name}" created: ${partner.id}`
        : `partner "${partner.name}" exists: ${partner.id}; not created again`,
    );
    console.log(
      result.adminCreated
        ? `administrator ${admin.email} created: ${admin.id} (partner_admin)`
        : `administrator ${admin.email} exists: ${admin.id}; not created again`,
    );
    if (process.env.COGNITO_USER_POOL_ID) {
      await inviteLogin(admin);
      console.log(
        `login of ${admin.email} in user pool ${process.env.COGNITO_USER_POOL_ID}: the pool mails a temporary password`,
      );
    }
    console.log(`export PARTNER_ID=${partner.id}`);
    console.log(await signIn(result, Boolean(process.env.DB_CLUSTER_ARN)));
    return 0;
  } catch (error) {
    if (error instanceof DomainError && error.code === 'CONFLICT') {
      console.error(`refused: ${error.message}`);
      return 1;
    }
    throw error;
  } finally {
    await db.close();
  }
}

runCommand(main, (error) => (error instanceof Error ? error.message : error));
