import { ServerCredentials, type ChannelOptions, type Server } from '@grpc/grpc-js';

/**
 * Binds `server` to `host:port` (port 0 picks a free one) and resolves with the bound port.
 * `bindAsync` starts serving by itself; the deprecated `server.start()` is never called.
 */
export function bindServer(
  server: Server,
  host: string,
  port: number,
  credentials: ServerCredentials = ServerCredentials.createInsecure(),
): Promise<number> {
  const address = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
  return new Promise((resolve, reject) => {
    server.bindAsync(address, credentials, (err, boundPort) =>
      err ? reject(err) : resolve(boundPort),
    );
  });
}

/**
 * Lets in-flight calls finish for up to `graceMs`, then cancels whatever is still running.
 * Resolves `true` when the graceful path sufficed.
 */
export function shutdownServer(server: Server, graceMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      server.forceShutdown();
      resolve(false);
    }, graceMs);
    server.tryShutdown(() => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

/** Server options shared by every server of the project. */
export function serverOptions(maxMessageBytes: number): ChannelOptions {
  return {
    'grpc.max_receive_message_length': maxMessageBytes,
    'grpc.max_send_message_length': maxMessageBytes,
  };
}
