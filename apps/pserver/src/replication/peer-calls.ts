import fs from 'node:fs';
import type { ServerSecuritySettings } from '@pserver/config';
import type {
  ReplicaLoadedRequest,
  ReplicaLoadedResponse__Output,
  ReplicationClient,
} from '@pserver/proto';
import { callUnary, channelSecurity, replicationClient, type ClientSecurity } from '@pserver/rpc';
import type { MoveTarget } from '../shard/share-parts';
import type { ForwardCall } from './replica-links';
import type { PrimaryCalls } from './replica-follower';

/** A forward attempt's deadline: a replica that has not applied a push by then is asked again. */
const forwardTimeoutMs = 10_000;

/**
 * How this pserver dials the others of its shard: plaintext when it serves plaintext; under TLS
 * with its own certificate as the client certificate and its client CA as the CA of the servers'
 * certificates (one CA for the job's pservers).
 */
export function peerSecurity(settings: ServerSecuritySettings): ClientSecurity {
  const tls = settings.tls;
  if (!tls) return {};
  return {
    tls: {
      ca: tls.clientCaFile ? fs.readFileSync(tls.clientCaFile) : undefined,
      cert: fs.readFileSync(tls.certFile),
      key: fs.readFileSync(tls.keyFile),
    },
  };
}

/** One replication client per peer address, kept while the process lives. */
export class PeerClients {
  private readonly clients = new Map<string, ReplicationClient>();

  constructor(
    private readonly security: ClientSecurity,
    private readonly channelOptions: Record<string, number>,
  ) {}

  of(address: string): ReplicationClient {
    let client = this.clients.get(address);
    if (!client) {
      const { credentials, options } = channelSecurity(this.security);
      client = replicationClient(address, credentials, { ...options, ...this.channelOptions });
      this.clients.set(address, client);
    }
    return client;
  }

  /** The primary's Forward, to a replica. */
  readonly forward: ForwardCall = (address, request, signal) => {
    const client = this.of(address);
    return callUnary(client.Forward.bind(client), request, {
      timeoutMs: forwardTimeoutMs,
      signal,
    });
  };

  /** A replica's calls to its primary. */
  primaryCalls(
    address: string,
    facts: {
      index: number;
      primaryEpoch: number;
      member: string;
      /** A live move's receiver rather than a replica. */
      moveTo?: MoveTarget;
    },
  ): PrimaryCalls {
    const client = this.of(address);
    return {
      fetchSnapshot: (onChunk, signal) =>
        new Promise<void>((resolve, reject) => {
          const call = client.FetchSnapshot(facts);
          const cancel = (): void => call.cancel();
          signal.addEventListener('abort', cancel, { once: true });
          // Chunks are written in order, one at a time: the stream pauses while one is written.
          let writing = Promise.resolve();
          call.on('data', (chunk) => {
            call.pause();
            writing = writing
              .then(() => onChunk(chunk))
              .then(
                () => void call.resume(),
                (err: unknown) => {
                  call.cancel();
                  reject(err);
                },
              );
          });
          call.on('error', (err) => {
            signal.removeEventListener('abort', cancel);
            reject(err);
          });
          call.on('end', () => {
            signal.removeEventListener('abort', cancel);
            void writing.then(() => resolve(), reject);
          });
        }),
      loaded: async (seq, signal) => {
        const reply = await callUnary<ReplicaLoadedRequest, ReplicaLoadedResponse__Output>(
          client.ReplicaLoaded.bind(client),
          { ...facts, seq },
          { timeoutMs: forwardTimeoutMs, signal },
        );
        return reply.inSync;
      },
    };
  }

  close(): void {
    for (const client of this.clients.values()) client.close();
    this.clients.clear();
  }
}
