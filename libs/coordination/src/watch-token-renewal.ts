import { InterceptingCall, status, type Interceptor } from '@grpc/grpc-js';

const watchMethod = '/etcdserverpb.Watch/Watch';

/**
 * A client interceptor for etcd3's channels that keeps watches working when etcd drops an auth
 * token. etcd forgets a simple token unused for `--auth-token-ttl` (300 s by default) and every
 * token when it restarts. etcd3 1.1.2 authenticates a unary call again when etcd refuses its
 * token, but not a watch stream: etcd cancels each watch created on a stream whose token it no
 * longer knows, etcd3 hands that to the one watcher as an error and its queue of watches to
 * create then waits for an answer that never comes — every later watch of the client hangs, and
 * after an etcd restart every watcher it re-creates fails (a leading master stops reconciling).
 *
 * On such a refusal this lets `renew` (a unary call, which makes etcd3 fetch a new token if its
 * own is stale) finish, then ends the stream with UNAVAILABLE instead of passing the refusal on:
 * etcd3 reconnects after its backoff and creates every watcher again, from the revision it had
 * reached, with the token it now holds.
 */
export function watchTokenRenewal(renew: () => Promise<unknown>): Interceptor {
  let renewing: Promise<void> | undefined;
  const renewOnce = (): Promise<void> =>
    (renewing ??= renew()
      .then(
        () => undefined,
        () => undefined, // the reconnect after the backoff tries again in any case
      )
      .finally(() => {
        renewing = undefined;
      }));
  return (options, nextCall) => {
    if (options.method_definition.path !== watchMethod) {
      return new InterceptingCall(nextCall(options));
    }
    const call: InterceptingCall = new InterceptingCall(nextCall(options), {
      start(metadata, _listener, next) {
        next(metadata, {
          onReceiveMessage(message: unknown, nextMessage: (message: unknown) => void) {
            if (!refusesToken(message)) {
              nextMessage(message);
              return;
            }
            void renewOnce().then(() => {
              call.cancelWithStatus(status.UNAVAILABLE, 'etcd refused the watch stream’s token');
              // The end of the stream, not the refusal, reaches etcd3 (then the status above).
              nextMessage(null);
            });
          },
        });
      },
    });
    return call;
  };
}

/** A watch response cancelling a watch for an unknown token. */
function refusesToken(message: unknown): boolean {
  if (typeof message !== 'object' || message === null) return false;
  const { canceled, cancel_reason: reason } = message as {
    canceled?: unknown;
    cancel_reason?: unknown;
  };
  // etcd says why only in text (etcd3 maps etcd's errors by their text too). Some etcd 3.4
  // releases said "permission denied" here (etcd-io/etcd#12385), which cannot be told from a real
  // refusal: that is left as it is.
  return canceled === true && typeof reason === 'string' && reason.includes('invalid auth token');
}
