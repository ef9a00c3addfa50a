-- Fleet keys (issue 18): an enrollment key enrolls at most max_usage devices (default 1, a single install; up to
-- 100,000). Keys made before this were unlimited; they keep the cap's maximum so no running deployment breaks.
ALTER TABLE enrollment_keys ADD COLUMN max_usage integer;
--> statement-breakpoint
UPDATE enrollment_keys SET max_usage = 100000;
--> statement-breakpoint
ALTER TABLE enrollment_keys ALTER COLUMN max_usage SET DEFAULT 1, ALTER COLUMN max_usage SET NOT NULL,
  ADD CONSTRAINT enrollment_keys_max_usage_check CHECK (max_usage BETWEEN 1 AND 100000);
--> statement-breakpoint
-- Counted in the same statement that checks the cap, under the key's row lock: concurrent enrollments never pass it.
ALTER TABLE enrollment_keys ADD COLUMN usage_count integer NOT NULL DEFAULT 0,
  ADD CONSTRAINT enrollment_keys_usage_check CHECK (usage_count BETWEEN 0 AND max_usage);
--> statement-breakpoint
-- The key sealed (AES-256-GCM under ENROLLMENT_KEY_SEAL_KEY) so its deployment script can carry it later; NULL for
-- keys made before, or without the seal key configured: their script holds a placeholder.
ALTER TABLE enrollment_keys ADD COLUMN key_sealed text;
