-- A new alert's ticket waiting for its number (docs/alerts.md "Ticket numbers"). The raising transaction writes the
-- request and commits without taking the partner's ticket counter; right after its commit one statement numbers every
-- request of the partner waiting then, under the counter's lock for that statement's transaction only: it deletes the
-- requests, advances the counter by their count, makes the tickets, points their alerts at them and writes their
-- `ticket.create` audit intents, so a partner's tickets stay numbered from 1 without gaps and each ticket is audited
-- with the change that made it. `entry` is that audit row as the raising request wrote it (none when the event could
-- not be made a row, which is logged, as auditChange does), its resourceName set to `#<number>` by the numbering;
-- `intent_ids` are the raising transaction's own intents (its `alert.create`), sealed with the ticket's, before it.
CREATE TABLE ticket_requests (
  seq         bigint GENERATED ALWAYS AS IDENTITY,
  alert_id    uuid PRIMARY KEY REFERENCES alerts (id) ON DELETE CASCADE,
  partner_id  uuid NOT NULL,
  org_id      uuid NOT NULL,
  ticket_id   uuid NOT NULL,
  title       varchar(500) NOT NULL,
  entry       jsonb,
  intent_ids  bigint[] NOT NULL DEFAULT '{}'
);
--> statement-breakpoint
CREATE INDEX ticket_requests_partner_idx ON ticket_requests (partner_id, seq);
--> statement-breakpoint
GRANT SELECT, INSERT, DELETE ON ticket_requests TO logbook_app;
