-- Site time zones are stored in their canonical IANA spelling (issue 12: `europe/berlin` is `Europe/Berlin`);
-- the API canonicalizes new values, this respells the ones stored before. IANA names differ by more than case.
UPDATE sites s SET timezone = z.name
FROM pg_timezone_names z
WHERE lower(z.name) = lower(s.timezone) AND s.timezone <> z.name;
