import fs from 'node:fs';
import type { ServerSecuritySettings } from '@pserver/config';
import type {
  ForwardResponse__Output,
  ReplicaLoadedRequest,
  ReplicaLoadedResponse__Output,
  ReplicationClient,
} from '@pserver/proto';
import { callUnary, channelSecurity, replicationClient, type ClientSecurity } from '@pserver/rpc';
import type { MoveTarget } from '../shard/share-parts';
import type { OpenForwardStream } from './forward-batches';
import type { PrimaryCalls } from './replica-follower';

/** ReplicaLoaded's deadline: a primary that has not answered by then is asked again. */
const loadedTimeoutMs = 10_000;

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

  /** The primary's stream of forwards, to a replica or a live move's receiver. */
  readonly forward: OpenForwardStream = (address, events) => {
    const call = this.of(address).ForwardStream();
    let ended = false;
    const end = (error?: unknown): void => {
      if (ended) return;
      ended = true;
      events.ended(error);
    };
    call.on('data', (reply: ForwardResponse__Output) => events.answered(Number(reply.appliedSeq)));
    call.on('error', end);
    call.on('end', () => end());
    return {
      write: (forwards) => call.write({ forwards }),
      cancel: () => {
        ended = true;
        call.cancel();
      },
    };
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
          { timeoutMs: loadedTimeoutMs, signal },
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
