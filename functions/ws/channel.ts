import { onAuditSealed } from '#shared/audit/sealed.ts';
import { armAfterSeal } from '#shared/audit-streams/arm.ts';
import { receiveMessagesNaming, receiveMessagesOfType } from '#shared/live-query/answers.ts';
import { whenAgentConnects, whenAgentDisconnects } from '#shared/live-query/connections.ts';
import { offlineAfterConnect, offlineAfterDisconnect } from '#shared/monitoring/evaluate.ts';
import { receiveHeartbeatMessage } from '#shared/monitoring/heartbeat-message.ts';
import { installDelivery, receivePatchResult } from '#shared/patching/install.ts';
import { receiveRunMessage } from '#shared/scripts/answers.ts';
import { connectDelivery } from '#shared/scripts/dispatch.ts';

/**
 * The agent channel's users, registered where the WebSocket routes are composed: script runs wait for an agent's
 * connection and answer on it, as patch installs do (patch.install out, patch.result back); heartbeats arrive on it
 * (answered like POST /agents/{id}/heartbeat). A connection keeps its device online: the device's offline monitors
 * clear when it opens and are armed when it closes. The audit rows a
 * heartbeat seals arm its organization's audit streams, as on the HTTP side. Imported by each WebSocket handler
 * before it serves a message.
 */
whenAgentConnects(connectDelivery);
whenAgentConnects(offlineAfterConnect);
whenAgentDisconnects(offlineAfterDisconnect);
whenAgentConnects(installDelivery);
receiveMessagesOfType('patch.result', receivePatchResult);
receiveMessagesNaming('runItemId', receiveRunMessage);
receiveMessagesOfType('heartbeat', receiveHeartbeatMessage);
onAuditSealed(armAfterSeal);
