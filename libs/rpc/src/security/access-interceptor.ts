import { ServerInterceptingCall, type ServerInterceptor } from '@grpc/grpc-js';
import type { Logger } from '@pserver/logging';
import { toStatus } from '../status-mapping';
import { accessTo, mayCall } from './access-policy';
import type { Authenticator } from './authenticator';

class AccessRefused extends Error {
  constructor(
    readonly code: 'AUTH_UNAUTHENTICATED' | 'AUTH_PERMISSION_DENIED',
    message: string,
  ) {
    super(message);
  }
}

/**
 * Checks who is calling before anything else runs: on the call's headers, before a request
 * message is read or a handler started. A refused call is answered UNAUTHENTICATED or
 * PERMISSION_DENIED (with `pserver-error-code`) and never reaches the service.
 */
export function accessInterceptor(authenticator: Authenticator, logger: Logger): ServerInterceptor {
  return (descriptor, call) =>
    new ServerInterceptingCall(call, {
      start: (next) =>
        next({
          onReceiveMetadata: (metadata, nextMetadata) => {
            const path = descriptor.path;
            if (accessTo(path) === 'public') return nextMetadata(metadata);
            const caller = authenticator.identify(metadata, call.getAuthContext());
            let refusal: AccessRefused | undefined;
            if ('refusal' in caller) {
              refusal = new AccessRefused('AUTH_UNAUTHENTICATED', `${path}: ${caller.refusal}`);
            } else if (!mayCall(path, caller.roles)) {
              const held = caller.roles.size > 0 ? [...caller.roles].join(', ') : 'no role';
              refusal = new AccessRefused(
                'AUTH_PERMISSION_DENIED',
                `${path}: ${caller.name} holds ${held}; this method needs ` + describeAccess(path),
              );
            }
            if (!refusal) return nextMetadata(metadata);
            logger.warn('call refused', {
              peer: call.getPeer(),
              code: refusal.code,
              reason: refusal.message,
            });
            const { code, details, metadata: trailers } = toStatus(refusal);
            call.sendStatus({ code, details, metadata: trailers });
          },
        }),
    });
}

function describeAccess(path: string): string {
  const access = accessTo(path);
  if (typeof access === 'string') return access;
  return [...access, 'admin'].join(' or ');
}
