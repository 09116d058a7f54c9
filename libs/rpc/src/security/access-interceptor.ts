import {
  type Metadata,
  ServerInterceptingCall,
  type ServerInterceptor,
  type StatusObject,
} from '@grpc/grpc-js';
import type { Logger } from '@pserver/logging';
import { toStatus } from '../status-mapping';
import { accessTo, mayCall } from './access-policy';
import type { AuthContext, Authenticator } from './authenticator';

class AccessRefused extends Error {
  constructor(
    readonly code: 'AUTH_UNAUTHENTICATED' | 'AUTH_PERMISSION_DENIED',
    message: string,
  ) {
    super(message);
  }
}

/**
 * Decides on a call's headers whether its caller may call `path`: undefined lets it through,
 * otherwise the UNAUTHENTICATED or PERMISSION_DENIED status (with `pserver-error-code`) to answer
 * it with. Every way a server serves calls runs this one check before anything else.
 */
export type AccessCheck = (
  path: string,
  metadata: Metadata,
  auth: AuthContext,
  peer: string,
) => StatusObject | undefined;

/** The access check of `authenticator`; a refusal is logged as a warning. */
export function accessCheck(authenticator: Authenticator, logger: Logger): AccessCheck {
  return (path, metadata, auth, peer) => {
    if (accessTo(path) === 'public') return undefined;
    const caller = authenticator.identify(metadata, auth);
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
    if (!refusal) return undefined;
    logger.warn('call refused', { peer, code: refusal.code, reason: refusal.message });
    const { code, details, metadata: trailers } = toStatus(refusal);
    return { code, details, metadata: trailers };
  };
}

/**
 * Runs `check` on the call's headers, before a request message is read or a handler started. A
 * refused call is answered with the check's status and never reaches the service.
 */
export function accessInterceptor(check: AccessCheck): ServerInterceptor {
  return (descriptor, call) =>
    new ServerInterceptingCall(call, {
      start: (next) =>
        next({
          onReceiveMetadata: (metadata, nextMetadata) => {
            const refusal = check(descriptor.path, metadata, call.getAuthContext(), call.getPeer());
            if (refusal) call.sendStatus(refusal);
            else nextMetadata(metadata);
          },
        }),
    });
}

function describeAccess(path: string): string {
  const access = accessTo(path);
  if (typeof access === 'string') return access;
  return [...access, 'admin'].join(' or ');
}
