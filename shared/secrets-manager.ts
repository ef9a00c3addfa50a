import { GetSecretValueCommand, PutSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { traced } from './observability/tracer.ts';

/**
 * The Secrets Manager client, built on first use. The SDK
 * is imported statically: every function that imports this module calls Secrets Manager in its cold start or first
 * invocation (the enrollment secret, the anchor key, the migration's logins).
 */
let client: SecretsManagerClient | undefined;

const secretsManager = () => (client ??= traced(new SecretsManagerClient({})));

/** The text of a secret. */
export async function readSecret(secretArn: string): Promise<string> {
  const { SecretString } = await secretsManager().send(new GetSecretValueCommand({ SecretId: secretArn }));
  if (SecretString === undefined) throw new Error(`secret ${secretArn} holds no text`);
  return SecretString;
}

/** Stores a new value of a secret (its new current version), for a function that may write the secret but not read it. */
export async function writeSecret(secretArn: string, text: string): Promise<void> {
  await secretsManager().send(new PutSecretValueCommand({ SecretId: secretArn, SecretString: text }));
}

/**
 * In Lambda, settings that are secrets arrive as `<NAME>_ARN` (the secret's ARN, readable by that function alone)
 * instead of their value in the function's configuration; this sets `<NAME>` from the secret once per cold start.
 */
export async function loadSecretSettings(names: readonly string[]): Promise<void> {
  await Promise.all(
    names.map(async (name) => {
      const arn = process.env[`${name}_ARN`];
      if (arn && process.env[name] === undefined) process.env[name] = await readSecret(arn);
    }),
  );
}
