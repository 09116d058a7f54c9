import { readCheckpointFile } from '@pserver/checkpoint';

/** What a replacement pserver restored: when its snapshot was taken and whose steps it holds. */
export interface RestoredCheckpoint {
  file: string;
  /** The snapshot's time (the header's creation time), in ms since the Unix epoch. */
  snapshotMs: number;
  /** Trainer id → the last step of that trainer the snapshot holds (the shard's step marks). */
  marks: Map<number, number>;
  /** A delta: the pserver restored a chain, a full checkpoint and the deltas after it. */
  delta: boolean;
}

/**
 * Reads a checkpoint file's header and step marks (the file is verified on the way). A delta
 * holds the step marks whole, so its own are those of the chain it ends.
 */
export async function readRestoredCheckpoint(file: string): Promise<RestoredCheckpoint> {
  const marks = new Map<number, number>();
  const read = await readCheckpointFile(file, {
    stepMarks: (entries) => {
      for (const mark of entries) marks.set(Number(mark.trainerId), Number(mark.step));
    },
  });
  // Nanoseconds as a decimal string: milliseconds without losing the integer part.
  const snapshotMs = Number(BigInt(read.header.createdUnixNs) / 1_000_000n);
  return { file, snapshotMs, marks, delta: read.header.parentUuid !== '' };
}
