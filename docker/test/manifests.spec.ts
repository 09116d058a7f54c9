import fs from 'node:fs';
import path from 'node:path';
import * as apps from 'kubernetes-models/apps/v1';
import * as batch from 'kubernetes-models/batch/v1';
import * as policy from 'kubernetes-models/policy/v1';
import * as core from 'kubernetes-models/v1';
import {
  bundleCommandLines,
  compose,
  dockerDir,
  kubernetesObjects,
  kustomization,
} from './deployment-files';

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
    const deployment = objects.find((o) => o.object.kind === 'Deployment')!.object;
    const broken = structuredClone(deployment);
    broken.spec.template.spec.containers[0].ports[0].containerPort = 'eighty';
    expect(() => new apps.Deployment(broken).validate()).toThrow(/containerPort/);
  });

  it('keep the master ready as a follower, and the pservers a grace period for a final checkpoint', () => {
    const byName = (kind: string, name: string): any =>
      objects.find((o) => o.object.kind === kind && o.object.metadata.name === name)!.object;
    const master = byName('Deployment', 'master');
    expect(master.spec.replicas).toBe(2);
    // gRPC health "" is SERVING on every healthy replica; only the Master service is leader-only.
    expect(master.spec.template.spec.containers[0].readinessProbe.grpc.service).toBeUndefined();
    const pserver = byName('Deployment', 'pserver');
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
    for (const { where, args } of bundleCommandLines())
      expect([where, args[0]]).toEqual([
        where,
        expect.stringMatching(/^dist\/(apps|examples)\/[\w-]+\/main\.js$/),
      ]);
  });
});
