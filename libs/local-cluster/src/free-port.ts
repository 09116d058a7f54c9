import fs from 'node:fs';
import net from 'node:net';

/**
 * A TCP port on 127.0.0.1 that was free a moment ago, chosen below the kernel's ephemeral range.
 *
 * Tests give such a port to a process that keeps it for its life, through restarts (a master, a
 * restarted etcd). A port from the ephemeral range could be taken meanwhile as the local end of any
 * outgoing connection or by any server binding port 0, and a long-lived connection would keep it:
 * the process could never bind it again. Below that range only another `freePort` can pick it, and
 * the ports handed out here are not handed out twice.
 */
export async function freePort(): Promise<number> {
  const [low, high] = portRange();
  if (high - low < 1_024) return anyPort();
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = low + Math.floor(Math.random() * (high - low));
    if (handedOut.has(port) || !(await canBind(port))) continue;
    handedOut.add(port);
    return port;
  }
  throw new Error(`freePort: no free port found in ${low}-${high - 1}`);
}

const handedOut = new Set<number>();

/** [first, end) of the ports to choose from: the 16 k below the ephemeral range, above 1024. */
function portRange(): [number, number] {
  let ephemeralLow = 32_768;
  try {
    const text = fs.readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8');
    ephemeralLow = Number(text.trim().split(/\s+/)[0]) || ephemeralLow;
  } catch {
    // Not Linux: keep the usual lower bound of the ephemeral range.
  }
  return [Math.max(1_025, ephemeralLow - 16_384), ephemeralLow];
}

/** A port the kernel picks (from the ephemeral range), when there is no room below it. */
async function anyPort(): Promise<number> {
  const port = await bindOnce(0);
  if (port === undefined) throw new Error('freePort: no port was assigned');
  return port;
}

const canBind = async (port: number): Promise<boolean> => (await bindOnce(port)) !== undefined;

/** Binds `port` on 127.0.0.1 and closes it again: the port bound, or undefined if it was taken. */
function bindOnce(port: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.unref();
    server.once('error', () => resolve(undefined));
    server.listen(port, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' ? address?.port : undefined));
    });
  });
}
