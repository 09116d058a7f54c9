import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';

export interface MetricsServer {
  /** `host:port` it listens on. */
  address: string;
  close(): Promise<void>;
}

/** Serves `registry` in Prometheus's text format at `GET /metrics` (port 0 picks a free one). */
export async function serveMetrics(
  registry: Registry,
  host: string,
  port: number,
): Promise<MetricsServer> {
  const server = http.createServer((request, response) => {
    if (request.method !== 'GET' || request.url?.split('?')[0] !== '/metrics') {
      response.writeHead(404).end('not found: GET /metrics\n');
      return;
    }
    registry.metrics().then(
      (text) => response.writeHead(200, { 'Content-Type': registry.contentType }).end(text),
      (err: unknown) => response.writeHead(500).end(`metrics failed: ${String(err)}\n`),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  });
  const { port: bound } = server.address() as AddressInfo;
  return {
    address: host.includes(':') ? `[${host}]:${bound}` : `${host}:${bound}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
