import { createLogger } from '@pserver/logging';
import { loadConfig } from './config';
import { PserverNode } from './pserver-node';

async function main(): Promise<void> {
  const config = loadConfig(process.argv);
  const logger = createLogger({
    name: 'pserver',
    level: config.logLevel,
    format: config.logFormat,
  });
  const node = new PserverNode(config, logger);
  process.on('uncaughtException', (err) => {
    logger.fatal('uncaught exception', { err });
    process.exit(70);
  });
  await node.start();

  let stopping = false;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (stopping) return;
    stopping = true;
    logger.info('shutting down', { signal });
    node.stop().then(
      () => process.exit(0),
      (err: unknown) => {
        logger.error('shutdown failed', { err });
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
}

main().catch((err: unknown) => {
  console.error('pserver failed to start:', err);
  process.exit(1);
});
