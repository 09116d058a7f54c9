import path from 'node:path';
import { CheckpointError } from './errors';
import { chainOf, type ChainFile, type CheckpointMeta } from './meta';
import { readCheckpointFile, type CheckpointVisitor, type ReadOptions } from './reader';

/** Where in a chain the file being read stands. */
export interface ChainPosition {
  file: ChainFile;
  /** 0 for the full checkpoint the chain starts from. */
  index: number;
  /** The meta's own file: its tensors and step marks are the shard's. */
  last: boolean;
}

export interface ChainVisitor extends CheckpointVisitor {
  /** Called before each file's records. */
  file?(position: ChainPosition): void;
}

/** A chain could not be read: `file` is the one at fault (missing, corrupt or out of place). */
export class ChainFileError extends CheckpointError {
  constructor(
    readonly file: ChainFile,
    cause: CheckpointError,
  ) {
    super(cause.code, cause.message, { cause });
  }
}

/**
 * Reads what restoring `meta` takes: the files of its chain in order (the full checkpoint, then
 * each delta), then its own, each verified against the size and checksum the meta records, and
 * each delta's header checked to name the file before it as its parent. Throws `ChainFileError`
 * naming the first file that fails; the visitor may have seen records of the chain by then, so
 * callers restore into fresh state and keep it only on success.
 */
export async function readCheckpointChain(
  root: string,
  meta: CheckpointMeta,
  visitor: ChainVisitor,
  options: ReadOptions = {},
): Promise<{ files: number; bytes: number }> {
  const files = chainOf(meta);
  let bytes = 0;
  for (const [index, file] of files.entries()) {
    const parent = index === 0 ? '' : files[index - 1]!.uuid;
    visitor.file?.({ file, index, last: index === files.length - 1 });
    try {
      const read = await readCheckpointFile(
        path.join(root, file.path),
        {
          ...visitor,
          header: (header) => {
            if (header.uuid !== '' && header.uuid !== file.uuid)
              throw new CheckpointError(
                'CHECKPOINT_CORRUPT',
                `checkpoint ${file.path} is ${header.uuid}, its meta says ${file.uuid}`,
              );
            if (header.parentUuid !== parent)
              throw new CheckpointError(
                'CHECKPOINT_CORRUPT',
                `checkpoint ${file.path} applies on "${header.parentUuid}", its chain puts it on "${parent}"`,
              );
            visitor.header?.(header);
          },
        },
        file,
        options,
      );
      bytes += read.size;
    } catch (err) {
      if (err instanceof CheckpointError) throw new ChainFileError(file, err);
      throw err;
    }
  }
  return { files: files.length, bytes };
}
