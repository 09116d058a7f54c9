import { X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as apps from 'kubernetes-models/apps/v1';
import * as batch from 'kubernetes-models/batch/v1';
import { etcdSecurityOptions, serverSecurityOptions } from '@pserver/config';
import {
  dockerDir,
  kubernetesObjects,
  makeTlsSecrets,
  tlsOverlay,
  tlsOverlayDir,
  type Manifest,
  type TlsSecrets,
} from './deployment-files';
import { applyPatches, identity, strategicMerge } from './strategic-merge';

// docker/k8s-tls applied to the base by a small strategic merge (./strategic-merge.ts, enough
// for these patches), then checked against what make-secrets.sh writes: every file a container
// is told to read is in a Secret it mounts, and the names the clients check are the ones the
// certificates carry. No kustomize runs here (kubectl may not be installed).

const base = kubernetesObjects();
const overlay = tlsOverlay();
const objects = applyPatches(base, overlay.patches);
const patched = objects.filter((o) => o.file.includes('k8s-tls/'));
const find = (kind: string, name: string): Manifest =>
  objects.find((o) => o.object.kind === kind && o.object.metadata.name === name)!.object;

/** The flags of the pserver and the master that name a file, and their variables, by app. */
const fileOptions = (prefix: 'PSERVER' | 'MASTER'): { flags: string[]; env: string[] } => {
  const options = [...serverSecurityOptions(prefix), ...etcdSecurityOptions(prefix)];
  const files = options.filter((o) => o.flags.includes('<file>'));
  return { flags: files.map((o) => o.long!), env: files.map((o) => o.envVar!) };
};
/** The example trainer's flags that name a file (its --help). */
const trainerFileFlags = ['--tls-ca', '--tls-cert', '--tls-key', '--token-file'];

/** The app a container runs, by the variables' prefix: PSERVER, MASTER, or none (a trainer). */
function appOf(container: Manifest): 'PSERVER' | 'MASTER' | undefined {
  const script = String(container.args?.[0]);
  if (script.includes('/apps/pserver/')) return 'PSERVER';
  if (script.includes('/apps/master/')) return 'MASTER';
  return undefined;
}

/** Every file a container is told to read, by the variable or flag that names it. */
function filesRead(container: Manifest): Map<string, string> {
  const app = appOf(container);
  const options = app ? fileOptions(app) : { flags: trainerFileFlags, env: [] };
  const files = new Map<string, string>();
  for (const { name, value } of container.env ?? [])
    if (options.env.includes(name)) files.set(name, value);
  for (const arg of container.args ?? []) {
    const [flag, ...value] = String(arg).split('=');
    if (options.flags.includes(flag!)) files.set(flag!, value.join('='));
  }
  return files;
}

/** Where a path lands in a pod: `<secret>/<key>`, or what is wrong with it. */
function resolve(pod: Manifest, container: Manifest, file: string): string {
  const mount = (container.volumeMounts ?? []).find((m: { mountPath: string }) =>
    file.startsWith(`${m.mountPath.replace(/\/$/, '')}/`),
  );
  if (!mount) return `${file}: under no volumeMount`;
  const volume = (pod.volumes ?? []).find((v: { name: string }) => v.name === mount.name);
  if (!volume?.secret) return `${file}: volume ${mount.name} is not a Secret`;
  const relative = path.posix.relative(mount.mountPath, file);
  const key = volume.secret.items
    ? volume.secret.items.find((i: { path: string }) => i.path === relative)?.key
    : relative;
  return `${volume.secret.secretName}/${key}`;
}

/** `<secret>/<key>` of every file of the first container (the one the patches change). */
function resolvedFiles(object: Manifest): Record<string, string> {
  const pod = object.spec.template.spec;
  const container = pod.containers[0];
  return Object.fromEntries(
    [...filesRead(container)].map(([by, file]) => [by, resolve(pod, container, file)]),
  );
}

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
});

describe('the TLS overlay (docker/k8s-tls)', () => {
  let made: TlsSecrets;
  let available: Set<string>;
  beforeAll(() => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tls-overlay-'));
    dirs.push(dir);
    made = makeTlsSecrets(dir);
    available = new Set(
      [...made.secrets].flatMap(([name, data]) => [...data.keys()].map((key) => `${name}/${key}`)),
    );
  });

  it('builds on the base with every patch file of its directory', () => {
    const { kustomization } = overlay;
    expect(kustomization.resources).toEqual(['../k8s']);
    const files = fs
      .readdirSync(tlsOverlayDir)
      .filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml');
    expect(kustomization.patches.map((p) => p.path).sort()).toEqual(files.sort());
    // kustomize refuses a base directory that contains the overlay ("cycle detected").
    for (const resource of kustomization.resources) {
      const fromBase = path.relative(path.resolve(tlsOverlayDir, resource), tlsOverlayDir);
      expect([resource, fromBase.startsWith('..')]).toEqual([resource, true]);
    }
    expect(path.resolve(tlsOverlayDir, '../k8s')).toBe(path.join(dockerDir, 'k8s'));
  });

  it('patches objects the base has, each once', () => {
    expect(patched.map((o) => identity(o.object)).sort()).toEqual([
      'batch/v1 Job/linear-regression',
      'batch/v1 Job/master',
      'batch/v1 Job/pserver',
    ]);
    expect(objects.map((o) => identity(o.object))).toEqual(base.map((o) => identity(o.object)));
    // A patch whose object the base lost (renamed, removed) fails, as it does in kustomize.
    const stray = structuredClone(overlay.patches[0]!);
    stray.object.metadata.name = 'renamed';
    expect(() => applyPatches(base, [stray])).toThrow(/0 objects of the base are .*\/renamed/);
  });

  const models: Record<string, new (data: Manifest) => { validate(): void }> = {
    'apps/v1/Deployment': apps.Deployment,
    'batch/v1/Job': batch.Job,
  };
  it.each(
    patched.map(({ file, object }) => [`${file} ${object.kind}/${object.metadata.name}`, object]),
  )('%s validates against the Kubernetes API schema', (_name, object) => {
    const model = models[`${object.apiVersion}/${object.kind}`];
    expect(model).toBeDefined();
    expect(() => new model!(object).validate()).not.toThrow();
    const broken = structuredClone(object);
    broken.spec.template.spec.volumes.find((v: Manifest) => v.secret).secret.defaultMode = 'ug+r';
    expect(() => new model!(broken).validate()).toThrow(/defaultMode/);
  });

  it('serves mutual TLS with roles in the pservers and masters, from files in the Secrets', () => {
    for (const [name, prefix] of [
      ['pserver', 'PSERVER'],
      ['master', 'MASTER'],
    ] as const) {
      expect([name, resolvedFiles(find('Job', name))]).toEqual([
        name,
        {
          [`${prefix}_TLS_CERT`]: 'pserver-tls/server.pem',
          [`${prefix}_TLS_KEY`]: 'pserver-tls/server.key',
          [`${prefix}_TLS_CLIENT_CA`]: 'pserver-tls/ca.pem',
          [`${prefix}_AUTH_CONFIG`]: 'pserver-auth/auth.json',
        },
      ]);
    }
    expect(resolvedFiles(find('Job', 'linear-regression'))).toEqual({
      '--tls-ca': 'pserver-trainer-tls/ca.pem',
      '--tls-cert': 'pserver-trainer-tls/trainer.pem',
      '--tls-key': 'pserver-trainer-tls/trainer.key',
    });
  });

  it('points every file a container reads into a mounted Secret that make-secrets.sh writes, with that key', () => {
    let checked = 0;
    for (const { object } of patched) {
      const pod = object.spec.template.spec;
      for (const container of pod.containers) {
        for (const [by, file] of filesRead(container)) {
          const where = `${object.kind}/${object.metadata.name} ${by}=${file}`;
          const resolved = resolve(pod, container, file);
          expect([where, resolved, available.has(resolved)]).toEqual([where, resolved, true]);
          checked++;
        }
      }
    }
    expect(checked).toBe(11);
  });

  it('sets only variables the apps read', () => {
    for (const { file, object } of overlay.patches) {
      for (const container of object.spec?.template?.spec?.containers ?? []) {
        const app = appOf(
          find(object.kind, object.metadata.name).spec.template.spec.containers.find(
            (c: { name: string }) => c.name === container.name,
          ),
        );
        const known = app
          ? [...serverSecurityOptions(app), ...etcdSecurityOptions(app)].map((o) => o.envVar)
          : [];
        for (const { name } of container.env ?? [])
          expect([file, name, known.includes(name)]).toEqual([file, name, true]);
      }
    }
  });

  it('mounts only Secrets that make-secrets.sh writes, read-only, readable by the process through the pod’s fsGroup and by nobody else', () => {
    const names = [...made.secrets.keys()];
    const mounted = new Set<string>();
    for (const { object } of patched) {
      const where = `${object.kind}/${object.metadata.name}`;
      const pod = object.spec.template.spec;
      for (const volume of pod.volumes.filter((v: Manifest) => v.secret)) {
        expect([where, names.includes(volume.secret.secretName)]).toEqual([where, true]);
        mounted.add(volume.secret.secretName);
        // The process runs as uid 1000 and the kubelet writes Secret files as root: only the
        // group (the fsGroup, which the process holds) can let it read them.
        expect([where, pod.securityContext?.fsGroup]).toEqual([where, expect.any(Number)]);
        const mode: number = volume.secret.defaultMode;
        expect([where, mode & 0o040, mode & 0o227]).toEqual([where, 0o040, 0]);
        for (const container of pod.containers) {
          expect(container.securityContext?.runAsNonRoot ?? pod.securityContext?.runAsNonRoot).toBe(
            true,
          );
          for (const mount of container.volumeMounts ?? [])
            if (mount.name === volume.name) expect([where, mount.readOnly]).toEqual([where, true]);
        }
      }
    }
    expect([...mounted].sort()).toEqual([...names].sort());
  });

  it('probes the master’s port instead of gRPC health, which the kubelet cannot ask over TLS', () => {
    const container = (o: Manifest): Manifest => o.spec.template.spec.containers[0];
    const before = container(
      base.find((o) => identity(o.object) === 'batch/v1 Job/master')!.object,
    );
    expect(before.readinessProbe.grpc).toEqual({ port: 8200 });
    const master = container(find('Job', 'master'));
    for (const probe of ['readinessProbe', 'livenessProbe', 'startupProbe'])
      expect([probe, master[probe]?.grpc]).toEqual([probe, undefined]);
    expect(master.readinessProbe).toEqual({ tcpSocket: { port: 8200 }, periodSeconds: 5 });
    expect(master.livenessProbe).toMatchObject({ tcpSocket: { port: 8200 }, failureThreshold: 6 });
  });

  it('runs the trainers as the base does, plus TLS that checks the name in the server certificate', () => {
    const job = find('Job', 'linear-regression');
    const before = base.find((o) => identity(o.object) === 'batch/v1 Job/linear-regression')!.object
      .spec.template.spec.containers[0].args as string[];
    const args = job.spec.template.spec.containers[0].args as string[];
    // A patch replaces a list of strings whole: the overlay repeats the base's args, which must
    // not drift from them.
    expect(args.slice(0, before.length)).toEqual(before);
    const tls = args.slice(before.length).map((a) => a.split('=')[0]);
    expect(tls.sort()).toEqual(['--tls-ca', '--tls-cert', '--tls-key', '--tls-server-name']);
    const serverName = args.find((a) => a.startsWith('--tls-server-name='))!.split('=')[1]!;
    // The name make-secrets.sh puts in the server certificate when given none.
    const server = new X509Certificate(made.secrets.get('pserver-tls')!.get('server.pem')!);
    expect(server.subjectAltName).toBe(`DNS:${serverName}`);
    expect(server.checkHost(serverName)).toBe(serverName);
  });
});

describe('the small strategic merge the overlay is checked with', () => {
  it('merges maps recursively and deletes a key set to null', () => {
    expect(
      strategicMerge({ a: { b: 1, c: { grpc: 1 } }, d: 1 }, { a: { c: { grpc: null, tcp: 2 } } }),
    ).toEqual({ a: { b: 1, c: { tcp: 2 } }, d: 1 });
  });

  it('merges lists of maps by their Kubernetes merge key, and replaces other lists', () => {
    const container = {
      name: 'c',
      args: ['a', 'b'],
      env: [{ name: 'X', value: '1' }],
      volumeMounts: [{ name: 'v', mountPath: '/v' }],
    };
    expect(
      strategicMerge(
        { containers: [container, { name: 'other' }] },
        {
          containers: [
            {
              name: 'c',
              args: ['z'],
              env: [
                { name: 'X', value: '2' },
                { name: 'Y', value: '3' },
              ],
              volumeMounts: [{ name: 'v', mountPath: '/w', readOnly: true }],
            },
          ],
        },
      ),
    ).toEqual({
      containers: [
        {
          name: 'c',
          args: ['z'],
          env: [
            { name: 'X', value: '2' },
            { name: 'Y', value: '3' },
          ],
          volumeMounts: [
            { name: 'v', mountPath: '/v' },
            { name: 'v', mountPath: '/w', readOnly: true },
          ],
        },
        { name: 'other' },
      ],
    });
  });

  it('refuses directives it does not implement', () => {
    expect(() => strategicMerge({ a: [] }, { a: { $patch: 'replace' } })).toThrow(/\$patch/);
  });
});
