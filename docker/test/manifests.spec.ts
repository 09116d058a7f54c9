import fs from 'node:fs';
import path from 'node:path';
import * as apps from 'kubernetes-models/apps/v1';
import * as batch from 'kubernetes-models/batch/v1';
import * as networking from 'kubernetes-models/networking.k8s.io/v1';
import * as policy from 'kubernetes-models/policy/v1';
import * as core from 'kubernetes-models/v1';
import {
  bundleCommandLines,
  compose,
  dockerDir,
  kubernetesObjects,
  kustomization,
  tlsOverlay,
  type Manifest,
} from './deployment-files';
import { restrictedViolations } from './pod-security';
import { applyPatches } from './strategic-merge';

// The models of the Kubernetes API kinds the manifests use, with their JSON schemas.
const models: Record<string, new (data: any) => { validate(): void }> = {
  'v1/Namespace': core.Namespace,
  'v1/ConfigMap': core.ConfigMap,
  'v1/Service': core.Service,
  'v1/PersistentVolumeClaim': core.PersistentVolumeClaim,
  'apps/v1/StatefulSet': apps.StatefulSet,
  'apps/v1/Deployment': apps.Deployment,
  'batch/v1/Job': batch.Job,
  'policy/v1/PodDisruptionBudget': policy.PodDisruptionBudget,
  'networking.k8s.io/v1/NetworkPolicy': networking.NetworkPolicy,
};

describe('the Kubernetes manifests', () => {
  const objects = kubernetesObjects();

  it('list every manifest file of docker/k8s in the kustomization', () => {
    const files = fs
      .readdirSync(path.join(dockerDir, 'k8s'))
      .filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml');
    expect([...kustomization().resources].sort()).toEqual(files.sort());
  });

  it.each(
    objects.map(({ file, object }) => [`${file} ${object.kind}/${object.metadata?.name}`, object]),
  )('%s validates against the Kubernetes API schema', (_name, object) => {
    const model = models[`${object.apiVersion}/${object.kind}`];
    expect(model).toBeDefined();
    expect(() => new model!(object).validate()).not.toThrow();
  });

  it('refuses a manifest with a mistake (the validation can fail)', () => {
    const master = objects.find(
      (o) => o.object.kind === 'Job' && o.object.metadata.name === 'master',
    )!.object;
    const broken = structuredClone(master);
    broken.spec.template.spec.containers[0].ports[0].containerPort = 'eighty';
    expect(() => new batch.Job(broken).validate()).toThrow(/containerPort/);
  });

  it('keep the master ready as a follower, and the pservers a grace period for a final checkpoint', () => {
    const byName = (kind: string, name: string): any =>
      objects.find((o) => o.object.kind === kind && o.object.metadata.name === name)!.object;
    const master = byName('Job', 'master');
    expect(master.spec.parallelism).toBe(2);
    // gRPC health "" is SERVING on every healthy replica; only the Master service is leader-only.
    expect(master.spec.template.spec.containers[0].readinessProbe.grpc.service).toBeUndefined();
    const pserver = byName('Job', 'pserver');
    expect(pserver.spec.template.spec.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(60);
    expect(byName('PersistentVolumeClaim', 'checkpoints').spec.accessModes).toEqual([
      'ReadWriteMany',
    ]);
    expect(byName('StatefulSet', 'etcd').spec.replicas).toBe(3);
  });

  it('use the image the kustomization sets, and every container has resources', () => {
    const images = new Set(kustomization().images.map((i) => i.name));
    for (const { object } of objects) {
      for (const container of object.spec?.template?.spec?.containers ?? []) {
        expect(container.resources?.requests).toBeDefined();
        expect(container.resources?.limits?.memory).toBeDefined();
        if (!String(container.image).includes('etcd'))
          expect(images.has(container.image)).toBe(true);
      }
    }
  });
});

describe('the Kubernetes manifests, hardened', () => {
  const objects = kubernetesObjects();
  const byName = (kind: string, name: string): Manifest =>
    objects.find((o) => o.object.kind === kind && o.object.metadata.name === name)!.object;
  const withTls = applyPatches(objects, tlsOverlay().patches);
  const pods = (of: typeof objects) =>
    of
      .filter(({ object }) => object.spec?.template?.spec)
      .map(({ file, object }) => [`${file} ${object.kind}/${object.metadata.name}`, object]);

  it.each([...pods(objects), ...pods(withTls).map(([n, o]) => [`${n} (TLS)`, o])])(
    '%s: its pods pass Pod Security "restricted"',
    (_name, object) => {
      expect(restrictedViolations((object as Manifest).spec.template.spec)).toEqual([]);
    },
  );

  it('the restricted check can fail: what the profile forbids is named', () => {
    const pod = structuredClone(byName('Job', 'pserver').spec.template.spec);
    delete pod.securityContext.seccompProfile;
    pod.containers[0].securityContext.capabilities = { add: ['SYS_ADMIN'] };
    pod.volumes.push({ name: 'host', hostPath: { path: '/' } });
    pod.hostNetwork = true;
    expect(restrictedViolations(pod)).toEqual([
      'hostNetwork is true',
      'volume host is hostPath',
      'container pserver: seccompProfile is unset (pod or container), not RuntimeDefault or Localhost',
      'container pserver: capabilities.drop does not hold ALL',
    ]);
  });

  it('spread pservers (spares and replicas among them), masters and etcd members over the nodes', () => {
    const spread = byName('Job', 'pserver').spec.template.spec.topologySpreadConstraints;
    expect(spread).toEqual([
      expect.objectContaining({
        maxSkew: 1,
        topologyKey: 'kubernetes.io/hostname',
        labelSelector: { matchLabels: { 'app.kubernetes.io/name': 'pserver' } },
      }),
    ]);
    for (const [kind, name] of [
      ['Job', 'master'],
      ['StatefulSet', 'etcd'],
    ] as const) {
      const [term] = byName(kind, name).spec.template.spec.affinity.podAntiAffinity
        .preferredDuringSchedulingIgnoredDuringExecution;
      expect(term.podAffinityTerm).toEqual({
        topologyKey: 'kubernetes.io/hostname',
        labelSelector: { matchLabels: { 'app.kubernetes.io/name': name } },
      });
    }
  });

  it('give etcd a liveness probe that needs no quorum, and a disruption budget', () => {
    const etcd = byName('StatefulSet', 'etcd').spec.template.spec.containers[0];
    expect(etcd.livenessProbe.tcpSocket.port).toBe(2379);
    expect(byName('PodDisruptionBudget', 'etcd').spec.maxUnavailable).toBe(1);
  });

  it('let trainers reach masters and pservers, pservers and masters reach etcd, and nothing else', () => {
    const policies = objects.filter((o) => o.object.kind === 'NetworkPolicy').map((o) => o.object);
    const deny = policies.find((p) => p.metadata.name === 'default-deny-ingress')!;
    expect(deny.spec).toEqual({ podSelector: {}, policyTypes: ['Ingress'] });
    // Who may reach each app's ports: app names of pods in the namespace, or the monitoring one.
    const reach = (app: string): Record<number, string[]> => {
      const policy = policies.find(
        (p) => p.spec.podSelector.matchLabels?.['app.kubernetes.io/name'] === app,
      )!;
      const allowed: Record<number, string[]> = {};
      for (const rule of policy.spec.ingress)
        for (const { port } of rule.ports)
          allowed[port] = rule.from.map(
            (peer: Manifest) =>
              peer.podSelector?.matchLabels['app.kubernetes.io/name'] ??
              `namespace ${peer.namespaceSelector.matchLabels['kubernetes.io/metadata.name']}`,
          );
      return allowed;
    };
    expect(reach('etcd')).toEqual({
      2379: ['pserver', 'master', 'etcd'],
      2380: ['etcd'],
    });
    expect(reach('master')).toEqual({ 8200: ['trainer'], 9200: ['namespace monitoring'] });
    expect(reach('pserver')).toEqual({
      8100: ['trainer', 'pserver'],
      9100: ['namespace monitoring'],
    });
    // The trainers of the example job carry the label the policies name.
    expect(byName('Job', 'linear-regression').spec.template.metadata.labels).toEqual({
      'app.kubernetes.io/name': 'trainer',
    });
  });

  it('take the checkpoint volume’s storage class from the deployment parameters', () => {
    const [replacement] = kustomization().replacements;
    const parameters = byName('ConfigMap', 'deployment-parameters');
    expect(replacement!.source).toEqual({
      kind: 'ConfigMap',
      name: 'deployment-parameters',
      fieldPath: 'data.checkpointStorageClass',
    });
    expect(parameters.data.checkpointStorageClass).toEqual(expect.any(String));
    expect(replacement!.targets).toEqual([
      {
        select: { kind: 'PersistentVolumeClaim', name: 'checkpoints' },
        fieldPaths: ['spec.storageClassName'],
      },
    ]);
    // The field it replaces is there to be replaced.
    expect(byName('PersistentVolumeClaim', 'checkpoints').spec.storageClassName).toEqual(
      expect.any(String),
    );
  });
});

describe('the compose file', () => {
  it('runs 3 etcd members, 2 masters, 3 pservers and a trainer from one image', () => {
    const services = compose().services;
    const count = (script: string): number =>
      Object.values(services).filter((s) => s.command?.[0]?.includes(script)).length;
    expect(Object.keys(services).filter((s) => s.startsWith('etcd-'))).toHaveLength(3);
    expect(count('apps/master/')).toBe(2);
    expect(count('apps/pserver/')).toBe(3);
    expect(count('examples/linear-regression/')).toBe(1);
  });

  it('and the manifests start only bundles the image holds', () => {
    const lines = bundleCommandLines();
    // Every compose service but etcd runs the image (PSERVER_IMAGE's default).
    expect(lines.filter(({ where }) => where.startsWith('compose.yaml'))).toHaveLength(6);
    for (const { where, args } of lines)
      expect([where, args[0]]).toEqual([
        where,
        expect.stringMatching(/^dist\/(apps|examples)\/[\w-]+\/main\.js$/),
      ]);
  });
});
