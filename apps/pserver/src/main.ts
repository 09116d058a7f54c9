import { createLogger, type LogFields } from '@pserver/logging';
import { loadConfig } from './config';
import { tuneHeap } from './heap-tuning';
import { exitCodes, PserverNode, RefusedToStart } from './pserver-node';

async function main(): Promise<void> {
  const config = loadConfig(process.argv);
  tuneHeap(config.heapGrowingPercent);
  // Every line says which shard, at which epoch, once the node serves one.
  let context = (): LogFields => ({ component: 'node' });
  const logger = createLogger({
    name: 'pserver',
    level: config.logLevel,
    format: config.logFormat,
    context: () => context(),
  });
  process.on('uncaughtException', (err) => {
    logger.fatal('uncaught exception', { err });
    process.exit(70);
  });
  let node: PserverNode;
  try {
    node = new PserverNode(config, logger);
  } catch (err) {
    // Settings that cannot work (e.g. an unreadable certificate): one line says why.
    logger.fatal(`cannot start: ${(err as Error).message}`);
    process.exit(exitCodes.failure);
  }
  context = () => node.logContext();

  // Signals are handled from the start: a hot spare waiting for an index stops cleanly too.
  let stopping = false;
  const stop = (reason: string): void => {
    if (stopping) return;
    stopping = true;
    logger.info('shutting down', { reason });
    node.stop().then(
      () => process.exit(node.stopExitCode),
      (err: unknown) => {
        logger.fatal('shutdown failed: updates since the last checkpoint are lost', { err });
        process.exit(exitCodes.failure);
      },
    );
  };
  node.onStopRequested(stop);
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  if (config.exitOnStdinClose) {
    process.stdin.resume();
    process.stdin.once('end', () => stop('standard input closed'));
  }

  try {
    await node.start();
  } catch (err) {
    if (stopping) return;
    if (err instanceof RefusedToStart) {
      logger.fatal(err.message);
      process.exit(err.exitCode);
    }
    logger.fatal('failed to start', { err });
    process.exit(exitCodes.failure);
  }
}

void main();
