// docker/k8s as `podman kube play` (4.3) runs it: the same pods (containers, commands,
// environment, volumes, security context), with what only a Kubernetes cluster does done here by
// a small conversion. podman runs Pods, PersistentVolumeClaims and ConfigMaps; it ignores Jobs,
// StatefulSets, Services, PodDisruptionBudgets and NetworkPolicies, expands no `$(VAR)`, refuses
// a `status.podIP` field ref, and publishes every containerPort on the host.
import type { Manifest } from './deployment-files';

export interface KubePlayOptions {
  /** The image of each name the manifests use (the kustomization's `images`, etcd's registry). */
  images: Record<string, string>;
  /** Put before every volume's name: podman's volumes are global on the machine. */
  volumePrefix: string;
  /**
   * A directory on this machine for each Secret the pods mount, holding its keys as the kubelet
   * projects them (podman 4.3 panics on a Secret volume without `optional`, and mounts a
   * Secret's `data` still base64-encoded).
   */
  secretDirs?: Record<string, string>;
}

/** Kinds podman 4.3 does not run, checked offline instead (manifests.spec.ts, pod-security.ts). */
const leftToACluster = new Set(['Namespace', 'Service', 'PodDisruptionBudget', 'NetworkPolicy']);

/**
 * The objects to play, in order: ConfigMaps, volumes, then the pods:
 * - a Job of `parallelism` n becomes its n pods `<job>-<i>` (an Indexed Job's pods carry their
 *   completion index annotation), restarted by podman on failure where the Job controller would
 *   replace them;
 * - a StatefulSet becomes its pods `<name>-<i>` (hostname and subdomain as the controller sets
 *   them, so `etcd-0.etcd` resolves on the pods' network) and a claim per pod and template;
 * - a `status.podIP` field ref becomes the pod's name, which podman's DNS resolves; `$(VAR)`
 *   in env values, commands and args is expanded as the kubelet does;
 * - what a cluster's DNS resolves and podman's does not: a Service's name in an address
 *   `<service>:<port>` becomes its pods' addresses, comma-separated, and a pod's name under its
 *   headless Service (`etcd-0.etcd`) the pod's name alone (in ConfigMaps, env, commands, args);
 * - probes are dropped: podman turns them into healthchecks that need systemd's timers;
 * - a Secret volume becomes the directory `secretDirs` names for it;
 * - containerPorts are dropped (the pods reach each other by name on their network).
 */
export function forKubePlay(objects: Manifest[], options: KubePlayOptions): Manifest[] {
  const kept = objects.filter((o) => !leftToACluster.has(o.kind));
  const out: Manifest[] = [];
  for (const object of kept)
    if (object.kind === 'PersistentVolumeClaim')
      out.push(claim(`${options.volumePrefix}${object.metadata.name}`, object.spec));

  const pods: { name: string; owner: Manifest; annotations: Record<string, string> }[] = [];
  for (const owner of kept) {
    if (owner.kind === 'Job')
      for (let i = 0; i < (owner.spec.parallelism ?? 1); i++)
        pods.push({
          name: `${owner.metadata.name}-${i}`,
          owner,
          annotations:
            owner.spec.completionMode === 'Indexed'
              ? { 'batch.kubernetes.io/job-completion-index': String(i) }
              : {},
        });
    if (owner.kind === 'StatefulSet')
      for (let i = 0; i < owner.spec.replicas; i++)
        pods.push({ name: `${owner.metadata.name}-${i}`, owner, annotations: {} });
    if (owner.kind !== 'Job' && owner.kind !== 'StatefulSet' && owner.spec?.template)
      throw new Error(`${owner.kind}/${owner.metadata.name}: no conversion for podman kube play`);
  }
  const services = serviceAddresses(objects, pods);
  for (const object of kept)
    if (object.kind === 'ConfigMap')
      out.unshift({
        ...object,
        data: Object.fromEntries(
          Object.entries(object.data as Record<string, string>).map(([k, v]) => [
            k,
            withServices(v, services),
          ]),
        ),
      });

  for (const { name, owner, annotations } of pods) {
    const template = structuredClone(owner.spec.template);
    const spec = template.spec;
    if (owner.kind === 'Job')
      spec.restartPolicy = spec.restartPolicy === 'Never' ? 'OnFailure' : spec.restartPolicy;
    if (owner.kind === 'StatefulSet') {
      spec.hostname = name;
      spec.subdomain = owner.spec.serviceName;
      for (const template of owner.spec.volumeClaimTemplates ?? []) {
        const claimName = `${options.volumePrefix}${template.metadata.name}-${name}`;
        out.push(claim(claimName, template.spec));
        spec.volumes = [
          ...(spec.volumes ?? []),
          { name: template.metadata.name, persistentVolumeClaim: { claimName } },
        ];
      }
    }
    for (const volume of spec.volumes ?? []) {
      if (volume.secret) {
        const dir = options.secretDirs?.[volume.secret.secretName];
        if (!dir)
          throw new Error(`pod ${name}: no directory for Secret ${volume.secret.secretName}`);
        delete volume.secret;
        volume.hostPath = { path: dir, type: 'Directory' };
      }
      if (
        volume.persistentVolumeClaim &&
        !volume.persistentVolumeClaim.claimName.startsWith(options.volumePrefix)
      )
        volume.persistentVolumeClaim.claimName = `${options.volumePrefix}${volume.persistentVolumeClaim.claimName}`;
    }
    for (const container of spec.containers) {
      container.image = options.images[container.image] ?? container.image;
      delete container.ports;
      delete container.readinessProbe;
      delete container.livenessProbe;
      const vars = new Map<string, string>();
      for (const env of container.env ?? []) {
        const path: string | undefined = env.valueFrom?.fieldRef?.fieldPath;
        if (path === 'status.podIP' || path === 'metadata.name') env.value = name;
        else if (path?.startsWith('metadata.annotations[')) {
          const key = path.slice("metadata.annotations['".length, -"']".length);
          env.value = annotations[key];
        }
        if (path !== undefined && env.value !== undefined) delete env.valueFrom;
        if (env.value !== undefined) {
          env.value = withServices(expand(env.value, vars), services);
          vars.set(env.name, env.value);
        }
      }
      for (const field of ['command', 'args'] as const)
        if (container[field])
          container[field] = container[field].map((arg: string) =>
            withServices(expand(arg, vars), services),
          );
    }
    out.push({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name,
        labels: template.metadata?.labels ?? {},
        annotations: { ...template.metadata?.annotations, ...annotations },
      },
      spec,
    });
  }
  return out;
}

/**
 * A claim as podman makes it: a named volume. podman applies no fsGroup; the volume is owned by
 * the pods' user and group instead (every pod of docker/k8s runs as 1000:1000).
 */
function claim(name: string, spec: Manifest): Manifest {
  // The storage class names a cluster's provisioner; podman has one (local volumes).
  const rest = { ...spec };
  delete rest.storageClassName;
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: {
      name,
      annotations: { 'volume.podman.io/uid': '1000', 'volume.podman.io/gid': '1000' },
    },
    spec: rest,
  };
}

/** `$(VAR)` of a variable defined earlier, as the kubelet expands it; others are left as they are. */
function expand(text: string, vars: Map<string, string>): string {
  return text.replace(
    /\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g,
    (whole, name: string) => vars.get(name) ?? whole,
  );
}

/** Each Service's name, and the names of the pods its selector picks. */
function serviceAddresses(
  objects: Manifest[],
  pods: { name: string; owner: Manifest }[],
): Map<string, string[]> {
  const services = new Map<string, string[]>();
  for (const service of objects.filter((o) => o.kind === 'Service')) {
    const selector: Record<string, string> = service.spec.selector ?? {};
    const picked = pods.filter(({ owner }) =>
      Object.entries(selector).every(([k, v]) => owner.spec.template.metadata?.labels?.[k] === v),
    );
    services.set(
      service.metadata.name,
      picked.map((p) => p.name),
    );
  }
  return services;
}

/** `<pod>.<service>` as `<pod>`, and a value `<service>:<port>` (alone or after `=`) as its pods'. */
function withServices(text: string, services: Map<string, string[]>): string {
  let out = text;
  for (const [service, pods] of services)
    for (const pod of pods) out = out.replaceAll(`${pod}.${service}:`, `${pod}:`);
  return out.replace(
    /(^|=)([a-z0-9-]+):(\d+)$/,
    (whole, before: string, host: string, port: string) => {
      const pods = services.get(host);
      return pods ? before + pods.map((pod) => `${pod}:${port}`).join(',') : whole;
    },
  );
}
