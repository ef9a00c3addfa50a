-- A reminder of an alert still firing: a monitoring item's renotify interval tells its channels again.
ALTER TABLE notifications DROP CONSTRAINT notifications_event_check;
--> statement-breakpoint
ALTER TABLE notifications ADD CONSTRAINT notifications_event_check
  CHECK (event IN ('alert.created', 'alert.acknowledged', 'alert.resolved', 'alert.escalated', 'alert.renotified',
                   'alert.digest', 'channel.test'));
