import fs from 'node:fs';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { dockerDir, type Manifest } from './deployment-files';

export const monitoringDir = path.join(dockerDir, 'monitoring');

/** The PromQL expressions of the alert rules and of the dashboard's panels. */
export function monitoringExpressions(): { where: string; expr: string }[] {
  const rules = parseAllDocuments(
    fs.readFileSync(path.join(monitoringDir, 'alerts.yaml'), 'utf8'),
  )[0]!.toJS() as { groups: { rules: { alert: string; expr: string }[] }[] };
  const dashboard = JSON.parse(
    fs.readFileSync(path.join(monitoringDir, 'dashboard.json'), 'utf8'),
  ) as { panels: { title: string; targets: { expr: string }[] }[] };
  return [
    ...rules.groups.flatMap((g) =>
      g.rules.map((r) => ({ where: `alert ${r.alert}`, expr: r.expr })),
    ),
    ...dashboard.panels.flatMap((p) =>
      p.targets.map((t) => ({ where: `panel "${p.title}"`, expr: t.expr })),
    ),
  ];
}

/** The metric names an expression reads: this project's series (and the runtime's). */
export function metricNames(expr: string): string[] {
  return [...new Set(expr.match(/\b(?:pserver|process|nodejs)_[a-z0-9_]+/g) ?? [])];
}

/** The PodMonitors of the monitoring kustomization. */
export function podMonitors(): Manifest[] {
  return parseAllDocuments(
    fs.readFileSync(path.join(monitoringDir, 'pod-monitors.yaml'), 'utf8'),
  ).map((doc) => doc.toJS() as Manifest);
}
