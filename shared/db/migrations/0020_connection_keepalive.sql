-- Keep-alive messages no longer touch the database (issue 14: an idle agent must let Aurora pause), so a
-- connection's last keep-alive is not recorded; API Gateway's $disconnect and a Gone answer still remove its row.
ALTER TABLE agent_connections DROP COLUMN last_seen_at;
