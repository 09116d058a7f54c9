import net from 'node:net';

/**
 * A TCP port on 127.0.0.1 that was free a moment ago. Another process may take it before the
 * caller binds it, so callers that start servers on it retry with a new port when the bind fails.
 * Servers of our own bind port 0 instead and report the port they got.
 */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => {
        if (address && typeof address === 'object') resolve(address.port);
        else reject(new Error('freePort: no port was assigned'));
      });
    });
  });
}
