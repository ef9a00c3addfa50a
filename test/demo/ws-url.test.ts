import { describe, expect, it } from 'vitest';
import { wsUrlBeside } from '#demo/agent/ws-url.ts';

describe("the simulated agent's WebSocket URL", () => {
  it("is the --url's host one port up, as `npm start` listens", () => {
    expect(wsUrlBeside('http://localhost:3430')).toBe('ws://localhost:3431');
    expect(wsUrlBeside('http://127.0.0.1:3000/api/v1/')).toBe('ws://127.0.0.1:3001');
    expect(wsUrlBeside('https://logbook.example.test:8443')).toBe('wss://logbook.example.test:8444');
  });

  it('cannot follow from a URL without a port: --ws-url is asked for', () => {
    expect(() => wsUrlBeside('https://api.example.test')).toThrow(/give --ws-url/);
  });
});
