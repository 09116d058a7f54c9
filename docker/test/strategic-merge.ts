import type { Manifest } from './deployment-files';

/**
 * A small strategic merge patch, enough for the patches of docker/k8s-tls and no more: maps merge
 * recursively and `null` deletes a key; a list of maps merges item by item on its Kubernetes
 * merge key (`mountPath` for volumeMounts, `containerPort` for ports, `name` for containers, env
 * and volumes), new items appended (kustomize puts them first; order matters only to `$(VAR)`
 * references between env entries, which these patches do not make); every other list, `args`
 * included, is replaced whole. Directives (`$patch`, `$setElementOrder/…`,
 * `$deleteFromPrimitiveList/…`) are refused rather than misread: a patch that needs them needs a
 * real kustomize to check it.
 */
export function strategicMerge(base: unknown, patch: unknown, field = ''): unknown {
  if (isMap(patch)) {
    const merged: Record<string, unknown> = isMap(base) ? { ...base } : {};
    for (const [key, value] of Object.entries(patch)) {
      if (key.startsWith('$'))
        throw new Error(`strategic merge: the directive ${key} is not supported`);
      if (value === null) delete merged[key];
      else merged[key] = strategicMerge(merged[key], value, key);
    }
    return merged;
  }
  if (Array.isArray(patch) && Array.isArray(base) && patch.every(isMap) && base.every(isMap)) {
    const key = mergeKeys[field] ?? 'name';
    const merged = [...base];
    for (const item of patch) {
      if (!(key in item))
        throw new Error(`strategic merge: an item of ${field} has no merge key ${key}`);
      const at = merged.findIndex((b) => b[key] === item[key]);
      if (at >= 0) merged[at] = strategicMerge(merged[at], item, field) as Record<string, unknown>;
      else merged.push(strategicMerge(undefined, item, field) as Record<string, unknown>);
    }
    return merged;
  }
  return patch;
}

/** The Kubernetes merge keys of the lists these patches touch that are not merged by `name`. */
const mergeKeys: Record<string, string> = { volumeMounts: 'mountPath', ports: 'containerPort' };

export interface KubernetesObject {
  file: string;
  object: Manifest;
}

/**
 * Applies each patch to the object of the base it names (apiVersion, kind and name, as
 * kustomize matches them); a patch naming no object of the base throws, as kustomize does.
 */
export function applyPatches(
  base: KubernetesObject[],
  patches: KubernetesObject[],
): KubernetesObject[] {
  const result = base.map((o) => ({ ...o }));
  for (const patch of patches) {
    const matches = result.filter((o) => sameObject(o.object, patch.object));
    if (matches.length !== 1)
      throw new Error(
        `${patch.file}: ${matches.length} objects of the base are ${identity(patch.object)}`,
      );
    const target = matches[0]!;
    target.object = strategicMerge(target.object, patch.object) as Manifest;
    target.file = `${target.file} + ${patch.file}`;
  }
  return result;
}

export function identity(object: Manifest): string {
  return `${object.apiVersion} ${object.kind}/${object.metadata?.name}`;
}

function sameObject(a: Manifest, b: Manifest): boolean {
  return identity(a) === identity(b);
}

function isMap(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
