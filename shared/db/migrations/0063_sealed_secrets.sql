-- PSA integration secrets are sealed at rest (AES-256-GCM under ENROLLMENT_KEY_SEAL_KEY, an application setting the
-- database never sees, so no migration can seal them): a row written before holds its secret in the clear, marked
-- false here, until the application seals it on first read (its next delivery) or a new secret replaces it.
ALTER TABLE psa_integrations ADD COLUMN secret_sealed boolean NOT NULL DEFAULT false;
