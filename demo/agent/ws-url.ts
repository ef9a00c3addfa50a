/**
 * The WebSocket API beside the HTTP API of `npm start`: the same host, one port up (3000 → 3001), as the local server
 * listens unless WS_PORT moves it. A deployed stack's WebSocketUrl is elsewhere: give it as --ws-url.
 */
export function wsUrlBeside(server: string): string {
  const url = new URL(server);
  if (!url.port)
    throw new Error(`--url ${server} names no port, so the WebSocket URL cannot follow from it: give --ws-url`);
  url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
  url.port = String(Number(url.port) + 1);
  url.pathname = '/';
  url.search = '';
  return url.toString().replace(/\/$/, '');
}
