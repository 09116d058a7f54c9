import type { Logger } from '@pserver/logging';
import type { FailpointName, PserverConfig } from './config';

/** Fires the configured failpoint at `point`; true while a stall holds the caller there. */
export type FailpointHook = (point: FailpointName) => boolean;

/**
 * The hook that makes a configured failpoint happen: SIGKILL at the point (the crash tests), an
 * ENOSPC failure the first time it is reached (the disk-full test where no small filesystem can be
 * mounted), SIGSTOP (the fencing test; `after-recovery`: a spare paused between recovering a
 * shard and serving it), or a stall: the hook returns true and the caller never goes on (`forward`:
 * a replica alive but never applying, the lag test). Without a failpoint it does nothing.
 */
export function failpointHook(
  failpoint: PserverConfig['failpoint'],
  logger: Logger,
): FailpointHook | undefined {
  if (!failpoint) return undefined;
  let fired = false;
  return (point) => {
    if (point !== failpoint.point) return false;
    if (failpoint.action === 'stall') {
      if (!fired) logger.warn('failpoint: stalling here from now on', { point });
      fired = true;
      return true;
    }
    if (failpoint.action === 'kill') {
      logger.warn('failpoint: killing the process', { point });
      process.kill(process.pid, 'SIGKILL');
    } else if (failpoint.action === 'stop') {
      // Paused here until a SIGCONT: a pserver that sleeps through losing its lease.
      logger.warn('failpoint: stopping the process', { point });
      process.kill(process.pid, 'SIGSTOP');
    } else if (!fired) {
      fired = true;
      logger.warn('failpoint: failing with ENOSPC', { point });
      throw Object.assign(new Error(`ENOSPC: no space left on device (failpoint ${point})`), {
        code: 'ENOSPC',
      });
    }
    return false;
  };
}
