import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { metaToJson } from '@pserver/checkpoint';
import type { ShardTenure } from '@pserver/coordination';
import type {
  FetchSnapshotRequest__Output,
  ForwardBatchRequest__Output,
  ForwardRequest__Output,
  ForwardResponse,
  ReplicaLoadedRequest__Output,
  ReplicaLoadedResponse,
  SnapshotChunk,
} from '@pserver/proto';
import type { CallContext } from '@pserver/rpc';
import type { Checkpointer } from '../persistence/checkpointer';

import { PserverError, staleEpoch } from '../shard/errors';
import type { Shard } from '../shard/shard';
import { SharePlacement, type MoveTarget } from '../shard/share-parts';
import type { ReplicaFollower } from './replica-follower';
import type { ReplicaLinks } from './replica-links';

/** What this pserver is to its shard now, for the replication calls. */
export type ReplicationRole =
  | {
      kind: 'primary';
      shard: Shard;
      tenure: ShardTenure;
      links: ReplicaLinks;
      checkpointer: Checkpointer;
      /** Where copies for replicas are written while they are sent. */
      scratchDir: string;
      /** A live move's receiver asks for a copy: whether it is the one named, and its start. */
      moves?: {
        /** Whether `member` is named to receive index `to.index` of `to.shardCount`: its address. */
        receiver(member: string, to: MoveTarget): Promise<{ address: string } | undefined>;
        /** Forwards flow to the receiver from the copy's sequence number on (call in its tick). */
        startMoving(receiver: { member: string; address: string; to: MoveTarget }): number;
        /** `sentBytes` of the receiver's copy of `copyBytes` are sent. */
        sent(member: string, sentBytes: number, copyBytes: number): void;
        /** The receiver loaded its copy. */
        loaded(member: string): void;
      };
    }
  | { kind: 'replica'; follower: ReplicaFollower }
  | undefined;

/** A live move's receiving side (forwards of pushes sliced for it). */
export interface ReceivingRole {
  forward(request: ForwardRequest__Output): Promise<ForwardResponse>;
}

/** Bytes of a copy per SnapshotChunk. */
const chunkBytes = 1 << 20;

/**
 * The `pserver.v1.Replication` service without gRPC: FetchSnapshot and ReplicaLoaded answered by
 * a primary (its `ReplicaLinks`), ForwardStream by a replica (its `ReplicaFollower`). A call for a shard
 * or epoch this pserver does not hold that role for is refused and changes nothing.
 */
export class ReplicationService {
  constructor(
    private readonly role: () => ReplicationRole,
    /** This pserver's receiving side of live moves, if it has one. */
    private readonly receiving: () => ReceivingRole | undefined = () => undefined,
  ) {}

  async fetchSnapshot(
    request: FetchSnapshotRequest__Output,
    ctx: CallContext,
    send: (chunk: SnapshotChunk) => Promise<void>,
  ): Promise<void> {
    const primary = this.primary(request.index, request.primaryEpoch);
    const { moveTo } = request;
    const startFollowing = moveTo
      ? await this.moveStart(primary, request.member, moveTo)
      : () => primary.links.startFollowing(request.member);
    await primary.shard.whenInitialized(ctx.signal);
    const name = `copy-${randomUUID()}.ckpt`;
    let seq = 0;
    // The copy and the start of forwarding happen in one tick: no push falls between them. A
    // receiver's copy holds only the slices it takes.
    const meta = await primary.checkpointer.writeCopy(
      primary.scratchDir,
      name,
      () => {
        seq = startFollowing();
      },
      moveTo
        ? new SharePlacement(primary.shard.shardCount, moveTo.shardCount).sliceFilter(moveTo.index)
        : undefined,
    );
    const file = path.join(primary.scratchDir, name);
    try {
      const handle = await fs.open(file, 'r');
      try {
        const metaJson = JSON.stringify(metaToJson({ ...meta, path: name }));
        let first = true;
        for (let offset = 0; offset < meta.size || first; offset += chunkBytes) {
          ctx.signal.throwIfAborted();
          const data = Buffer.allocUnsafe(Math.min(chunkBytes, meta.size - offset));
          if (data.byteLength > 0) await handle.read(data, 0, data.byteLength, offset);
          await send(first ? { seq, metaJson, data } : { data });
          if (moveTo) primary.moves?.sent(request.member, offset + data.byteLength, meta.size);
          first = false;
        }
      } finally {
        await handle.close();
      }
    } finally {
      await fs.rm(file, { force: true });
    }
  }

  replicaLoaded(request: ReplicaLoadedRequest__Output): ReplicaLoadedResponse {
    const primary = this.primary(request.index, request.primaryEpoch);
    if (request.moveTo) {
      if (!primary.moves)
        throw new PserverError('PSERVER_NOT_REPLICA', 'this primary moves no slices');
      primary.moves.loaded(request.member);
      return { inSync: false };
    }
    return { inSync: primary.links.loaded(request.member, request.seq) };
  }

  /**
   * One batch of a ForwardStream: each forward in its turn (a replica or receiver orders them by
   * sequence number); answers once all are applied.
   */
  async forwardBatch({ forwards }: ForwardBatchRequest__Output): Promise<ForwardResponse> {
    if (forwards.length === 0)
      throw new PserverError(
        'PSERVER_INVALID_ARGUMENT',
        'ForwardStream: a batch with no forwards (forwards is empty)',
      );
    const replies = await Promise.all(forwards.map((forward) => this.forward(forward)));
    return {
      appliedSeq: replies.reduce((seq, reply) => Math.max(seq, Number(reply.appliedSeq)), 0),
    };
  }

  /** One forward, to the replica or the live move's receiver it is for. */
  private async forward(request: ForwardRequest__Output): Promise<ForwardResponse> {
    if (request.moveTo) {
      const receiving = this.receiving();
      if (!receiving)
        throw new PserverError('PSERVER_NOT_REPLICA', 'this pserver receives no live move');
      return receiving.forward(request);
    }
    const role = this.role();
    if (role?.kind !== 'replica')
      throw new PserverError(
        'PSERVER_NOT_REPLICA',
        `this pserver replicates no shard (asked for shard ${request.index})`,
      );
    return role.follower.forward(request);
  }

  /** How a live move's receiver starts following, once it is checked to be the one named. */
  private async moveStart(
    primary: Extract<ReplicationRole, { kind: 'primary' }>,
    member: string,
    to: MoveTarget,
  ): Promise<() => number> {
    const moves = primary.moves;
    const named = await moves?.receiver(member, to);
    if (!moves || !named)
      throw new PserverError(
        'PSERVER_NOT_REPLICA',
        `member ${member} is not the receiver of index ${to.index} of ${to.shardCount} shards`,
      );
    return () => moves.startMoving({ member, address: named.address, to });
  }

  private primary(index: number, epoch: number): Extract<ReplicationRole, { kind: 'primary' }> {
    const role = this.role();
    if (role?.kind !== 'primary' || role.shard.index !== index || !role.tenure.holds())
      throw new PserverError(
        'PSERVER_NOT_REPLICA',
        `this pserver is not the primary of shard ${index}`,
      );
    if (epoch < role.tenure.epoch) throw staleEpoch(epoch, role.tenure.epoch);
    if (epoch > role.tenure.epoch)
      throw new PserverError(
        'PSERVER_NOT_REPLICA',
        `shard ${index}: primary epoch ${epoch} is not this primary's (${role.tenure.epoch})`,
      );
    return role;
  }
}
