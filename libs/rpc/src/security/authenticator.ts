import { timingSafeEqual } from 'node:crypto';
import type { PeerCertificate } from 'node:tls';
import type { Metadata, ServerInterceptingCallInterface } from '@grpc/grpc-js';
import { tokenDigest, type AccessConfig, type CertificateRule } from './access-config';
import type { Role } from './access-policy';

/** Who is calling, as far as the server could verify. */
export interface Caller {
  /** For logs: the certificate's subject CN or first SAN, or the token's name. */
  name: string;
  roles: ReadonlySet<Role>;
}

/** What grpc-js knows of a call's transport (its own type is not exported). */
export type AuthContext = ReturnType<ServerInterceptingCallInterface['getAuthContext']>;

export const authorizationHeader = 'authorization';

/**
 * Identifies callers from their verified client certificate (grpc-js reports a peer certificate
 * only when the TLS handshake verified it against the client CA) and from an
 * `authorization: Bearer <token>` header. Without an access config, any verified certificate is
 * an admin: the client CA alone decides who gets in.
 */
export class Authenticator {
  constructor(private readonly config: AccessConfig | undefined) {}

  /** The caller, or why there is none (a message for the UNAUTHENTICATED status). */
  identify(metadata: Metadata, auth: AuthContext | null): Caller | { refusal: string } {
    const certificate = auth?.sslPeerCertificate;
    const headers = metadata.get(authorizationHeader);
    if (headers.length > 1)
      return { refusal: 'the call carries more than one authorization header' };
    const [header] = headers;
    let token: { name: string; role: Role } | undefined;
    if (header !== undefined) {
      const match = /^Bearer +(\S+) *$/.exec(header.toString());
      if (!match?.[1]) return { refusal: 'the authorization header is not "Bearer <token>"' };
      token = this.tokenOwner(match[1]);
      if (!token) return { refusal: 'the bearer token is not one this server knows' };
    }
    if (!certificate && !token) {
      return {
        refusal:
          'the call carries neither a client certificate signed by the server’s client CA ' +
          'nor a bearer token',
      };
    }
    const held = new Set<Role>(token ? [token.role] : []);
    if (certificate) for (const role of this.certificateRoles(certificate)) held.add(role);
    return { name: token?.name ?? certificateName(certificate), roles: held };
  }

  private certificateRoles(certificate: PeerCertificate): Role[] {
    if (!this.config) return ['admin'];
    return this.config.certificateRules
      .filter((rule) => matches(rule, certificate))
      .map((rule) => rule.role);
  }

  /** Compares against every known token, each in constant time, and never stops early. */
  private tokenOwner(token: string): { name: string; role: Role } | undefined {
    const digest = tokenDigest(token);
    let owner: { name: string; role: Role } | undefined;
    for (const known of this.config?.tokens ?? []) {
      if (timingSafeEqual(known.digest, digest)) owner = known;
    }
    return owner;
  }
}

function matches(rule: CertificateRule, certificate: PeerCertificate): boolean {
  if (rule.field === 'san') return subjectAltNames(certificate).includes(rule.value);
  const values = (certificate.subject as unknown as Record<string, string | string[] | undefined>)[
    rule.field.toUpperCase()
  ];
  return Array.isArray(values) ? values.includes(rule.value) : values === rule.value;
}

/** Node prints SANs as `DNS:a, URI:b, IP Address:1.2.3.4` (values with a comma are quoted). */
function subjectAltNames(certificate: PeerCertificate): string[] {
  return (certificate.subjectaltname ?? '').split(', ').filter(Boolean);
}

function certificateName(certificate: PeerCertificate | undefined): string {
  const cn = certificate?.subject?.CN as string | string[] | undefined;
  const first = Array.isArray(cn) ? cn[0] : cn;
  return first ?? subjectAltNames(certificate as PeerCertificate)[0] ?? 'unnamed certificate';
}
