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

export function kustomization(): { resources: string[]; images: { name: string }[] } {
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
  return doc.toJS({ maxAliasCount: 100 });
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
  const config = kubernetesObjects().find((o) => o.object.kind === 'ConfigMap')!;
  return config.object.data;
}
