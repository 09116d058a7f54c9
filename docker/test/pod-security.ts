import type { Manifest } from './deployment-files';

/**
 * What a pod spec breaks of the Pod Security Standards' "restricted" profile
 * (https://kubernetes.io/docs/concepts/security/pod-security-standards/, v1.30): the baseline
 * controls and the restricted ones, as the admission controller applies them to every container,
 * init container and ephemeral container. Empty when the pod would be admitted.
 */
export function restrictedViolations(pod: Manifest): string[] {
  const violations: string[] = [];
  const security = pod.securityContext ?? {};
  const containers: Manifest[] = [
    ...(pod.containers ?? []),
    ...(pod.initContainers ?? []),
    ...(pod.ephemeralContainers ?? []),
  ];
  const each = (check: (c: Manifest) => string | undefined): void => {
    for (const container of containers) {
      const broken = check(container);
      if (broken) violations.push(`container ${container.name}: ${broken}`);
    }
  };

  // Baseline.
  for (const host of ['hostNetwork', 'hostPID', 'hostIPC'])
    if (pod[host]) violations.push(`${host} is true`);
  each((c) => (c.securityContext?.privileged ? 'privileged' : undefined));
  each((c) =>
    (c.ports ?? []).some((p: Manifest) => p.hostPort) ? 'a hostPort is set' : undefined,
  );
  each((c) =>
    c.securityContext?.procMount && c.securityContext.procMount !== 'Default'
      ? `procMount ${c.securityContext.procMount}`
      : undefined,
  );
  for (const sysctl of security.sysctls ?? [])
    if (!safeSysctls.has(sysctl.name)) violations.push(`sysctl ${sysctl.name} is not a safe one`);
  const seLinuxTypes = [security, ...containers.map((c) => c.securityContext ?? {})]
    .map((s) => s.seLinuxOptions?.type)
    .filter((t) => t !== undefined && !allowedSeLinuxTypes.has(t));
  for (const type of seLinuxTypes) violations.push(`seLinuxOptions.type ${type}`);

  // Restricted.
  for (const volume of pod.volumes ?? []) {
    const kind = Object.keys(volume).find((k) => k !== 'name');
    if (!kind || !restrictedVolumeKinds.has(kind))
      violations.push(`volume ${volume.name} is ${kind ?? 'of no kind'}`);
  }
  each((c) =>
    c.securityContext?.allowPrivilegeEscalation === false
      ? undefined
      : 'allowPrivilegeEscalation is not false',
  );
  each((c) =>
    (c.securityContext?.runAsNonRoot ?? security.runAsNonRoot) === true
      ? undefined
      : 'runAsNonRoot is not true (pod or container)',
  );
  if (security.runAsUser === 0) violations.push('runAsUser is 0');
  each((c) => (c.securityContext?.runAsUser === 0 ? 'runAsUser is 0' : undefined));
  each((c) => {
    const type = (c.securityContext?.seccompProfile ?? security.seccompProfile)?.type;
    return type === 'RuntimeDefault' || type === 'Localhost'
      ? undefined
      : `seccompProfile is ${type ?? 'unset'} (pod or container), not RuntimeDefault or Localhost`;
  });
  each((c) => {
    const caps = c.securityContext?.capabilities ?? {};
    if (!(caps.drop ?? []).includes('ALL')) return 'capabilities.drop does not hold ALL';
    const added = (caps.add ?? []).filter((cap: string) => cap !== 'NET_BIND_SERVICE');
    return added.length > 0 ? `capabilities.add holds ${added.join(', ')}` : undefined;
  });
  return violations;
}

const safeSysctls = new Set([
  'kernel.shm_rmid_forced',
  'net.ipv4.ip_local_port_range',
  'net.ipv4.ip_unprivileged_port_start',
  'net.ipv4.tcp_syncookies',
  'net.ipv4.ping_group_range',
  'net.ipv4.ip_local_reserved_ports',
  'net.ipv4.tcp_keepalive_time',
  'net.ipv4.tcp_fin_timeout',
  'net.ipv4.tcp_keepalive_intvl',
  'net.ipv4.tcp_keepalive_probes',
]);

const allowedSeLinuxTypes = new Set(['', 'container_t', 'container_init_t', 'container_kvm_t']);

const restrictedVolumeKinds = new Set([
  'configMap',
  'csi',
  'downwardAPI',
  'emptyDir',
  'ephemeral',
  'persistentVolumeClaim',
  'projected',
  'secret',
]);
