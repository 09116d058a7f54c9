import nx from '@nx/eslint-plugin';
import importX, { createNodeResolver } from 'eslint-plugin-import-x';
import prettier from 'eslint-config-prettier';

// Which kind of project may import which (DESIGN section 7). Domain code (optimizer, checkpoint)
// stays free of grpc and etcd; only coordination and the test harness talk to etcd.
const grpc = ['@grpc/*', 'grpc-health-check'];
const etcd = ['etcd3'];
const libs = [
  'type:domain',
  'type:proto',
  'type:rpc',
  'type:coordination',
  'type:client',
  'type:util',
  'type:cluster',
];
const productionConstraints = [
  { sourceTag: 'type:app', onlyDependOnLibsWithTags: libs, bannedExternalImports: etcd },
  {
    sourceTag: 'type:util',
    onlyDependOnLibsWithTags: ['type:util'],
    bannedExternalImports: [...grpc, ...etcd],
  },
  {
    sourceTag: 'type:domain',
    onlyDependOnLibsWithTags: ['type:domain', 'type:proto', 'type:util'],
    bannedExternalImports: [...grpc, ...etcd],
  },
  { sourceTag: 'type:proto', onlyDependOnLibsWithTags: ['type:util'], bannedExternalImports: etcd },
  {
    sourceTag: 'type:rpc',
    onlyDependOnLibsWithTags: ['type:proto', 'type:util', 'type:domain'],
    bannedExternalImports: etcd,
  },
  {
    sourceTag: 'type:coordination',
    onlyDependOnLibsWithTags: ['type:domain', 'type:proto', 'type:rpc', 'type:util'],
  },
  {
    sourceTag: 'type:client',
    onlyDependOnLibsWithTags: ['type:domain', 'type:proto', 'type:rpc', 'type:util'],
    bannedExternalImports: etcd,
  },
  {
    sourceTag: 'type:cluster',
    onlyDependOnLibsWithTags: ['type:coordination', 'type:rpc', 'type:proto', 'type:util'],
    bannedExternalImports: etcd,
  },
  // Examples show the public client API and nothing else.
  {
    sourceTag: 'type:example',
    onlyDependOnLibsWithTags: ['type:client'],
    bannedExternalImports: [...grpc, ...etcd],
  },
  { sourceTag: 'type:testing', onlyDependOnLibsWithTags: ['type:testing', ...libs] },
  { sourceTag: 'type:tool', onlyDependOnLibsWithTags: ['type:testing', ...libs] },
];
// Tests of any project may also use the harness (and talk to etcd to check what a process wrote);
// the rest of the rules hold for them as for production code.
const testConstraints = productionConstraints.map((c) => ({
  ...c,
  onlyDependOnLibsWithTags: [...new Set([...c.onlyDependOnLibsWithTags, 'type:testing'])],
  bannedExternalImports:
    c.sourceTag === 'type:domain' || c.sourceTag === 'type:util' ? c.bannedExternalImports : [],
}));
// Which folder of the pserver may import which: each zone lists what a folder may import besides
// itself; everything else of the app is refused.
const pserverFolders = {
  shard: [],
  consistency: ['shard'],
  persistence: ['shard'],
  replication: ['shard', 'persistence'],
  service: ['shard', 'consistency'],
  transport: ['service', 'replication'],
  moves: ['shard', 'persistence', 'replication'],
  roles: [
    'shard',
    'moves',
    'consistency',
    'persistence',
    'replication',
    'service',
    'config.ts',
    'failpoint.ts',
    'metrics.ts',
  ],
};
const pserverLayers = {
  basePath: import.meta.dirname,
  zones: Object.entries(pserverFolders).map(([folder, allowed]) => ({
    target: `apps/pserver/src/${folder}`,
    from: 'apps/pserver/src',
    except: [folder, ...allowed].map((path) => `./${path}`),
    message: `apps/pserver/src/${folder} may import only ${allowed.length > 0 ? allowed.join(', ') : 'itself'} of the pserver (apps/pserver/README.md, "Layout").`,
  })),
};
const moduleBoundaries = (depConstraints) => [
  'error',
  { enforceBuildableLibDependency: true, allowCircularSelfDependency: false, depConstraints },
];

export default [
  ...nx.configs['flat/base'],
  ...nx.configs['flat/typescript'],
  {
    ignores: [
      '**/dist',
      '**/node_modules',
      '**/tmp',
      '**/.nx',
      '**/coverage',
      'libs/proto/src/generated/**',
    ],
  },
  {
    files: ['**/*.ts'],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    plugins: { 'import-x': importX },
    // Relative imports name TypeScript files without their extension: without a resolver that
    // knows .ts, import-x's rules (no-cycle, no-restricted-paths) would skip every such import.
    settings: { 'import-x/resolver-next': [createNodeResolver({ extensions: ['.ts', '.js'] })] },
    rules: {
      '@nx/enforce-module-boundaries': moduleBoundaries(productionConstraints),
      // With noUncheckedIndexedAccess, `a[i]!` in a bounded loop is the honest way to say
      // "in range"; the compiler keeps every other access checked.
      '@typescript-eslint/no-non-null-assertion': 'off',
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      'import-x/no-cycle': 'error',
    },
  },
  {
    files: ['**/*.spec.ts', '**/test/**/*.ts'],
    rules: { '@nx/enforce-module-boundaries': moduleBoundaries(testConstraints) },
  },
  {
    // The pserver's folders, each one idea, import only downward (apps/pserver/README.md,
    // "Layout"). Tests may assemble the layers above the one they test.
    files: ['apps/pserver/src/**/*.ts'],
    ignores: ['**/*.spec.ts'],
    rules: { 'import-x/no-restricted-paths': ['error', pserverLayers] },
  },
  prettier,
];
