import { stringify } from 'yaml';
import { kubernetesObjects, tlsOverlay, type Manifest } from './deployment-files';
import { applyPatches } from './strategic-merge';
import { forKubePlay } from './kube-play';

// The conversion of docker/k8s for podman kube play (kube-play.ts), checked offline; the
// container suite (image.container.spec.ts) plays what it gives.

const objects = kubernetesObjects().map(({ object }) => object);
const played = forKubePlay(objects, {
  images: { pserver: 'localhost/pserver:test' },
  volumePrefix: 'run-',
});
const pods = played.filter((o) => o.kind === 'Pod');
const pod = (name: string): Manifest => pods.find((p) => p.metadata.name === name)!;
const templateOf = (kind: string, name: string): Manifest =>
  objects.find((o) => o.kind === kind && o.metadata.name === name)!.spec.template.spec;

describe('docker/k8s for podman kube play', () => {
  it('keeps ConfigMaps and claims, turns Jobs and the StatefulSet into their pods, and leaves the rest to a cluster', () => {
    expect(played.map((o) => o.kind).filter((kind) => kind !== 'Pod')).toEqual([
      'ConfigMap',
      'ConfigMap',
      'PersistentVolumeClaim',
      'PersistentVolumeClaim',
      'PersistentVolumeClaim',
      'PersistentVolumeClaim',
    ]);
    expect(pods.map((p) => p.metadata.name).sort()).toEqual(
      [
        ...['etcd-0', 'etcd-1', 'etcd-2'],
        ...['linear-regression-0', 'linear-regression-1', 'linear-regression-2'],
        ...['master-0', 'master-1'],
        ...['pserver-0', 'pserver-1', 'pserver-2'],
      ].sort(),
    );
    const claims = played.filter((o) => o.kind === 'PersistentVolumeClaim');
    expect(claims.map((c) => c.metadata.name)).toEqual([
      'run-checkpoints',
      'run-data-etcd-0',
      'run-data-etcd-1',
      'run-data-etcd-2',
    ]);
    // podman applies no fsGroup: the volumes belong to the pods' user instead.
    for (const claim of claims)
      expect(claim.metadata.annotations).toEqual({
        'volume.podman.io/uid': '1000',
        'volume.podman.io/gid': '1000',
      });
    expect(pod('pserver-1').spec.volumes).toContainEqual({
      name: 'checkpoints',
      persistentVolumeClaim: { claimName: 'run-checkpoints' },
    });
    expect(pod('etcd-2').spec).toMatchObject({ hostname: 'etcd-2', subdomain: 'etcd' });
    expect(pod('etcd-2').spec.volumes).toContainEqual({
      name: 'data',
      persistentVolumeClaim: { claimName: 'run-data-etcd-2' },
    });
  });

  it('keeps each pod its template: security context, commands, volumes and resources', () => {
    for (const [name, kind, owner] of [
      ['master-1', 'Job', 'master'],
      ['pserver-0', 'Job', 'pserver'],
      ['linear-regression-2', 'Job', 'linear-regression'],
      ['etcd-0', 'StatefulSet', 'etcd'],
    ] as const) {
      const template = templateOf(kind, owner);
      const spec = pod(name).spec;
      expect([name, spec.securityContext]).toEqual([name, template.securityContext]);
      const [container] = spec.containers;
      const [original] = template.containers;
      expect([name, container.securityContext]).toEqual([name, original.securityContext]);
      expect([name, container.resources]).toEqual([name, original.resources]);
      expect([name, container.volumeMounts]).toEqual([name, original.volumeMounts]);
      expect([name, container.envFrom]).toEqual([name, original.envFrom]);
    }
    expect(pod('pserver-2').spec.containers[0].image).toBe('localhost/pserver:test');
    // What podman would refuse or publish on the host is gone.
    const text = played.map((o) => stringify(o)).join('---\n');
    for (const absent of ['$(', 'status.podIP', 'containerPort', 'Probe:'])
      expect([absent, text.includes(absent)]).toEqual([absent, false]);
  });

  it("resolves what a cluster's controllers and DNS give: field refs, $(VAR), Services, the Jobs' restarts", () => {
    const trainer = pod('linear-regression-1');
    expect(trainer.metadata.annotations['batch.kubernetes.io/job-completion-index']).toBe('1');
    expect(trainer.spec.restartPolicy).toBe('OnFailure');
    expect(pod('pserver-0').spec.restartPolicy).toBe('OnFailure');
    expect(trainer.spec.containers[0].args).toEqual(
      expect.arrayContaining([
        '--master=master-0:8200,master-1:8200',
        '--name=trainer-1',
        '--seed=11',
      ]),
    );
    const env = (name: string): Record<string, string> =>
      Object.fromEntries(pod(name).spec.containers[0].env.map((e: Manifest) => [e.name, e.value]));
    expect(env('pserver-2')).toEqual({
      POD_IP: 'pserver-2',
      PSERVER_MEMBER: 'pserver-2',
      PSERVER_ADVERTISE_ADDRESS: 'pserver-2:8100',
    });
    expect(env('master-0').MASTER_ADVERTISE_ADDRESS).toBe('master-0:8200');
    const config = played.find((o) => o.metadata.name === 'pserver-config')!.data;
    expect(config.PSERVER_ETCD_ENDPOINTS).toBe(
      'http://etcd-0:2379,http://etcd-1:2379,http://etcd-2:2379',
    );
    expect(pod('etcd-1').spec.containers[0].command).toEqual(
      expect.arrayContaining([
        '--name=etcd-1',
        '--advertise-client-urls=http://etcd-1:2379',
        '--initial-cluster=etcd-0=http://etcd-0:2380,etcd-1=http://etcd-1:2380,etcd-2=http://etcd-2:2380',
      ]),
    );
  });

  it('mounts each Secret of the TLS overlay from the directory given for it, and refuses a Secret without one', () => {
    const tls = applyPatches(kubernetesObjects(), tlsOverlay().patches).map(({ object }) => object);
    const secretDirs = {
      'pserver-tls': '/s/tls',
      'pserver-auth': '/s/auth',
      'pserver-trainer-tls': '/s/trainer',
    };
    const pods = forKubePlay(tls, { images: {}, volumePrefix: 'run-', secretDirs }).filter(
      (o) => o.kind === 'Pod',
    );
    const volumes = (name: string): Manifest[] =>
      pods.find((p) => p.metadata.name === name)!.spec.volumes;
    expect(volumes('master-0')).toEqual(
      expect.arrayContaining([
        { name: 'tls', hostPath: { path: '/s/tls', type: 'Directory' } },
        { name: 'auth', hostPath: { path: '/s/auth', type: 'Directory' } },
      ]),
    );
    expect(volumes('linear-regression-0')).toContainEqual({
      name: 'tls',
      hostPath: { path: '/s/trainer', type: 'Directory' },
    });
    expect(JSON.stringify(pods)).not.toContain('secretName');
    expect(() => forKubePlay(tls, { images: {}, volumePrefix: 'run-' })).toThrow(
      /no directory for Secret pserver-tls/,
    );
  });
});
