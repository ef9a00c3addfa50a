-- Live event-log queries (seed 4.5, 7, 8): which WebSocket connection reaches each device's agent,
-- and the queries waiting for an agent's answer. In AWS the REST function that asks, the $default
-- function that receives the answer and the $connect/$disconnect functions are separate
-- invocations, so they meet here (shared/live-query/store.ts).

-- One live connection per device: a second connection of the same agent replaces the first
-- ($connect upserts on device_id and drops the old one). A row whose connection API Gateway no
-- longer knows (postToConnection answers Gone) is deleted, and the device counts as offline.
CREATE TABLE agent_connections (
  connection_id  text PRIMARY KEY,
  agent_id       uuid NOT NULL REFERENCES agents (id),
  device_id      uuid NOT NULL UNIQUE REFERENCES devices (id),
  org_id         uuid NOT NULL REFERENCES organizations (id),
  source_ip      varchar(45),
  connected_at   timestamptz NOT NULL DEFAULT now(),
  -- The last keep-alive message (anything without a requestId) the agent sent on this connection.
  last_seen_at   timestamptz NOT NULL DEFAULT now()
);
--> statement-breakpoint
GRANT SELECT, INSERT, UPDATE, DELETE ON agent_connections TO logbook_app;
--> statement-breakpoint
-- A query relayed to an agent and not answered yet. Only the connection it was sent on may answer
-- it (connection_id; a reconnecting agent gets the query again on its new connection). The asking
-- function deletes its row when it is done; a row left by a function that died is deleted by a
-- later query once it expired.
CREATE TABLE live_requests (
  request_id     uuid PRIMARY KEY,
  device_id      uuid NOT NULL REFERENCES devices (id),
  -- No foreign key: the connection may close while the query waits for its agent to come back.
  connection_id  text NOT NULL,
  type           varchar(50) NOT NULL,
  created_at     timestamptz NOT NULL DEFAULT now(),
  -- The asker stops waiting then (seed 8: 30 s); answers arriving later are ignored.
  expires_at     timestamptz NOT NULL,
  -- How many pieces the answer comes in, from its first piece (a single-message answer is 1 piece).
  chunks         integer CHECK (chunks BETWEEN 1 AND 64)
);
--> statement-breakpoint
CREATE INDEX live_requests_expires_idx ON live_requests (expires_at);
--> statement-breakpoint
-- The pieces of an answer as they arrive, in any order: API Gateway limits a WebSocket message to
-- 128 KB, so larger answers come as { requestId, chunk, chunks, data } and are put together here.
-- Pieces are kept per connection: after a query moved to a reconnected agent's new connection, only
-- that connection's pieces count.
CREATE TABLE live_request_chunks (
  request_id     uuid NOT NULL REFERENCES live_requests (request_id) ON DELETE CASCADE,
  connection_id  text NOT NULL,
  -- Numbered from 0 (an agent numbering from 1 works too: the pieces are read in order).
  chunk          integer NOT NULL CHECK (chunk BETWEEN 0 AND 64),
  data           text NOT NULL,
  received_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (request_id, connection_id, chunk)
);
--> statement-breakpoint
GRANT SELECT, INSERT, UPDATE, DELETE ON live_requests, live_request_chunks TO logbook_app;
