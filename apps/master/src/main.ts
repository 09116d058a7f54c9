import { createLogger } from '@pserver/logging';
import { loadConfig } from './config';
import { exitCodes, MasterNode } from './master-node';

async function main(): Promise<void> {
  const config = loadConfig(process.argv);
  const logger = createLogger({ name: 'master', level: config.logLevel, format: config.logFormat });
  process.on('uncaughtException', (err) => {
    logger.fatal('uncaught exception', { err });
    process.exit(70);
  });
  let node: MasterNode;
  let stopping = false;
  const stop = (reason: string): void => {
    if (stopping) return;
    stopping = true;
    logger.info('shutting down', { reason });
    node.stop().then(
      () => process.exit(node.stopExitCode),
      (err: unknown) => {
        logger.fatal('shutdown failed', { err });
        process.exit(exitCodes.failure);
      },
    );
  };
  try {
    node = new MasterNode(
      config,
      logger,
      (code) => process.exit(code),
      () => stop('the job is finished'),
    );
  } catch (err) {
    // Settings that cannot work (e.g. an unreadable certificate): one line says why.
    logger.fatal(`cannot start: ${(err as Error).message}`);
    process.exit(exitCodes.failure);
  }
  try {
    await node.start();
  } catch (err) {
    logger.fatal('failed to start', { err });
    process.exit(exitCodes.failure);
  }
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  if (config.exitOnStdinClose) {
    process.stdin.resume();
    process.stdin.once('end', () => stop('standard input closed'));
  }
}

void main();
