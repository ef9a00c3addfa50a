import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';

/** The Secrets Manager client (DESIGN.md "Layout": one adapter module per AWS SDK client), built on first use. */
let client: SecretsManagerClient | undefined;

/** The text of a secret. */
export async function readSecret(secretArn: string): Promise<string> {
  client ??= new SecretsManagerClient({});
  const { SecretString } = await client.send(new GetSecretValueCommand({ SecretId: secretArn }));
  if (SecretString === undefined) throw new Error(`secret ${secretArn} holds no text`);
  return SecretString;
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
