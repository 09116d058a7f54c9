import type {
  DrainResponse__Output,
  FinishJobResponse__Output,
  GetShardStatusResponse__Output,
  MasterClient,
  ParameterServerClient,
  SaveCheckpointResponse__Output,
  SetDesiredShardsResponse__Output,
  StatusResponse__Output,
} from '@pserver/proto';
import {
  callUnary,
  channelSecurity,
  masterClient,
  parameterServerClient,
  type ClientSecurity,
} from '@pserver/rpc';

/**
 * The ctl's calls to a job's masters and pservers, one gRPC channel per address, with the
 * security the servers take (TLS, mutual TLS, a bearer token: SECURITY.md). Every call is bounded
 * by `timeoutMs`; nothing is retried: an operator sees what each process answers.
 */
export class Connection {
  private readonly masters = new Map<string, MasterClient>();
  private readonly pservers = new Map<string, ParameterServerClient>();
  private readonly channel: ReturnType<typeof channelSecurity>;

  constructor(
    security: ClientSecurity,
    private readonly timeoutMs: number,
  ) {
    this.channel = channelSecurity(security);
  }

  status(master: string): Promise<StatusResponse__Output> {
    const client = this.master(master);
    return callUnary(client.status.bind(client), {}, { timeoutMs: this.timeoutMs });
  }

  setDesiredShards(master: string, shards: number): Promise<SetDesiredShardsResponse__Output> {
    const client = this.master(master);
    return callUnary(
      client.setDesiredShards.bind(client),
      { shardCount: shards },
      { timeoutMs: this.timeoutMs },
    );
  }

  finishJob(master: string): Promise<FinishJobResponse__Output> {
    const client = this.master(master);
    return callUnary(client.finishJob.bind(client), {}, { timeoutMs: this.timeoutMs });
  }

  drain(pserver: string): Promise<DrainResponse__Output> {
    const client = this.pserver(pserver);
    return callUnary(client.drain.bind(client), {}, { timeoutMs: this.timeoutMs });
  }

  shardStatus(pserver: string): Promise<GetShardStatusResponse__Output> {
    const client = this.pserver(pserver);
    return callUnary(client.getShardStatus.bind(client), {}, { timeoutMs: this.timeoutMs });
  }

  saveCheckpoint(pserver: string): Promise<SaveCheckpointResponse__Output> {
    const client = this.pserver(pserver);
    return callUnary(client.saveCheckpoint.bind(client), {}, { timeoutMs: this.timeoutMs });
  }

  close(): void {
    for (const client of [...this.masters.values(), ...this.pservers.values()]) client.close();
  }

  private master(address: string): MasterClient {
    let client = this.masters.get(address);
    if (!client) {
      client = masterClient(address, this.channel.credentials, this.channel.options);
      this.masters.set(address, client);
    }
    return client;
  }

  private pserver(address: string): ParameterServerClient {
    let client = this.pservers.get(address);
    if (!client) {
      client = parameterServerClient(address, this.channel.credentials, this.channel.options);
      this.pservers.set(address, client);
    }
    return client;
  }
}
