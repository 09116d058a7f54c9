import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';

export const dockerDir = path.join(__dirname, '..');

/** Every Kubernetes object of the kustomization, with the file it came from. */
export function kubernetesObjects(): { file: string; object: Record<string, any> }[] {
  return kustomizationResources().flatMap((file) =>
    parseAllDocuments(fs.readFileSync(path.join(dockerDir, 'k8s', file), 'utf8')).map((doc) => {
      if (doc.errors.length > 0) throw new Error(`${file}: ${doc.errors[0]!.message}`);
      return { file, object: doc.toJS() as Record<string, any> };
    }),
  );
}

export function kustomization(): {
  resources: string[];
  images: { name: string }[];
  replacements: {
    source: { kind: string; name: string; fieldPath: string };
    targets: { select: { kind: string; name: string }; fieldPaths: string[] }[];
  }[];
} {
  return parseAllDocuments(
    fs.readFileSync(path.join(dockerDir, 'k8s', 'kustomization.yaml'), 'utf8'),
  )[0]!.toJS();
}

export function kustomizationResources(): string[] {
  return kustomization().resources;
}

export function compose(): { services: Record<string, { command?: string[]; image?: string }> } {
  const [doc] = parseAllDocuments(fs.readFileSync(path.join(dockerDir, 'compose.yaml'), 'utf8'), {
    merge: true, // compose's `<<: *anchor`
  });
  if (!doc || doc.errors.length > 0) throw new Error(`compose.yaml: ${doc?.errors[0]?.message}`);
  const file = doc.toJS({ maxAliasCount: 100 });
  // The images as compose interpolates them with no variable set: `${PSERVER_IMAGE:-pserver:dev}`.
  for (const service of Object.values(file.services) as { image?: string }[])
    service.image = service.image?.replace(/\$\{\w+:-([^}]*)\}/g, '$1');
  return file;
}

/** A program's command line as a container runs it: the script, then its flags. */
export interface CommandLine {
  where: string;
  args: string[];
}

/** Every container command line (k8s and compose) that starts one of our bundles. */
export function bundleCommandLines(): CommandLine[] {
  const lines: CommandLine[] = [];
  for (const { file, object } of kubernetesObjects()) {
    const pod = object.spec?.template?.spec;
    for (const container of pod?.containers ?? []) {
      if (container.image === 'pserver')
        lines.push({
          where: `${file} ${object.kind}/${object.metadata.name}`,
          args: container.args,
        });
    }
  }
  for (const [name, service] of Object.entries(compose().services)) {
    if (service.image === 'pserver:dev' && service.command)
      lines.push({ where: `compose.yaml ${name}`, args: service.command });
  }
  return lines;
}

/** The environment variables the ConfigMap sets, by app prefix. */
export function configMapEnv(): Record<string, string> {
  const config = kubernetesObjects().find(
    (o) => o.object.kind === 'ConfigMap' && o.object.metadata.name === 'pserver-config',
  )!;
  return config.object.data;
}

/**
 * A Kubernetes object or a part of one as parsed from YAML: the tests walk it freely, and the
 * Kubernetes API schemas (kubernetes-models), not the compiler, say what it may hold.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Manifest = Record<string, any>;

/** The TLS overlay: a kustomization of the base with strategic-merge patches (README, "TLS"). */
export const tlsOverlayDir = path.join(dockerDir, 'k8s-tls');

export function tlsOverlay(): {
  kustomization: { resources: string[]; patches: { path: string }[] };
  patches: { file: string; object: Manifest }[];
} {
  const read = (file: string): Manifest[] =>
    parseAllDocuments(fs.readFileSync(path.join(tlsOverlayDir, file), 'utf8')).map((doc) => {
      if (doc.errors.length > 0) throw new Error(`k8s-tls/${file}: ${doc.errors[0]!.message}`);
      return doc.toJS() as Manifest;
    });
  const kustomization = read('kustomization.yaml')[0] as {
    resources: string[];
    patches: { path: string }[];
  };
  return {
    kustomization,
    patches: kustomization.patches.flatMap(({ path: file }) =>
      read(file).map((object) => ({ file: `k8s-tls/${file}`, object })),
    ),
  };
}

/** What `make-secrets.sh` wrote: its directory and the Secrets' data, decoded, by name. */
export interface TlsSecrets {
  dir: string;
  objects: Manifest[];
  secrets: Map<string, Map<string, Buffer>>;
}

/** Runs `docker/k8s-tls/make-secrets.sh <dir> [serverName]` and reads its `secrets.yaml`. */
export function makeTlsSecrets(dir: string, serverName?: string): TlsSecrets {
  execFileSync(
    'bash',
    [path.join(tlsOverlayDir, 'make-secrets.sh'), dir, ...(serverName ? [serverName] : [])],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  const objects = parseAllDocuments(fs.readFileSync(path.join(dir, 'secrets.yaml'), 'utf8')).map(
    (doc) => {
      if (doc.errors.length > 0) throw new Error(`secrets.yaml: ${doc.errors[0]!.message}`);
      return doc.toJS() as Manifest;
    },
  );
  const secrets = new Map(
    objects.map((o): [string, Map<string, Buffer>] => [
      o.metadata.name,
      new Map(
        Object.entries(o.data as Record<string, string>).map(([key, value]) => [
          key,
          Buffer.from(value, 'base64'),
        ]),
      ),
    ]),
  );
  return { dir, objects, secrets };
}
