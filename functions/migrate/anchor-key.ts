/**
 * The anchor signing key's custom resource (README "Deploy"): on create, and on each update (a new context
 * `anchorKeyGeneration` rotates the key), generates an Ed25519 key pair, writes the private key into the secret only
 * the retention worker reads (this function may write it, not read it), and answers the public key and its id as the
 * resource's attributes, which the stack gives the audit function as AUDIT_ANCHOR_PUBLIC_KEY to publish.
 */
import { anchorKeyId, generateAnchorKey, publicKeyPem } from '#shared/audit/anchor-signing.ts';
import { writeSecret } from '#shared/secrets-manager.ts';
import { customResource, setting } from './custom-resource.ts';

export const handler = customResource({
  physicalResourceId: 'logbook-anchor-key',
  // Deleting the resource leaves the key to its secret, whose own removal policy decides.
  onDelete: 'The signing key is kept in its secret',
  apply: async () => {
    const key = generateAnchorKey();
    await writeSecret(
      setting('AUDIT_ANCHOR_PRIVATE_KEY_SECRET_ARN'),
      key.export({ type: 'pkcs8', format: 'pem' }).toString(),
    );
    const keyId = anchorKeyId(key);
    return { reason: `New anchor signing key ${keyId}`, data: { publicKey: publicKeyPem(key), keyId } };
  },
});
