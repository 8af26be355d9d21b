import { createServer } from 'node:net';

/**
 * A port nobody listens on right now (the kernel's choice for port 0) on 127.0.0.1: sandbox and
 * test servers never bind a fixed port, so two runs on one machine cannot collide.
 */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}
