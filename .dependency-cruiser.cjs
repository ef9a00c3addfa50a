/**
 * Import directions (docs/ARCHITECTURE.md): the domain (shared/<domain>) is the inside; shared/http, functions/,
 * infra/, demo/, tools/ and bench/ are outer layers that may import it, never the other way round.
 * @type {import('dependency-cruiser').IConfiguration}
 */
module.exports = {
  forbidden: [
    {
      name: 'domain-imports-no-adapter',
      comment: 'shared/ outside shared/http is the domain: it never reaches an outer layer',
      severity: 'error',
      from: { path: '^shared/', pathNot: '^shared/http/' },
      to: { path: '^(shared/http|functions|infra|demo|tools|bench|test|web)/' },
    },
    {
      name: 'http-adapter-imports-no-handler-or-infra',
      comment: 'shared/http adapts HTTP to the domain for every handler; it knows none of them nor the infrastructure',
      severity: 'error',
      from: { path: '^shared/http/' },
      to: { path: '^(functions|infra|demo|tools|bench|test|web)/' },
    },
    {
      name: 'functions-import-no-infra',
      comment: 'a handler runs the same in Lambda and locally: it never imports the infrastructure',
      severity: 'error',
      from: { path: '^functions/' },
      to: { path: '^(infra|demo|tools|bench|test|web)/' },
    },
    {
      name: 'infra-imports-no-tests',
      comment: 'what runs (infra, demo, tools, benchmarks) never depends on the test suite',
      severity: 'error',
      from: { path: '^(infra|demo|tools|bench)/' },
      to: { path: '^test/' },
    },
    {
      name: 'web-imports-only-types',
      comment: 'the viewer runs in the browser: from shared/ it takes types only (erased at build)',
      severity: 'error',
      from: { path: '^web/src/' },
      to: { path: '^shared/', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'web-imports-no-server',
      comment: 'the viewer reaches the service over HTTP only',
      severity: 'error',
      from: { path: '^web/src/' },
      to: { path: '^(functions|infra|demo|tools|bench|test)/' },
    },
    {
      name: 'no-circular',
      comment: 'modules that import each other are one concept split in two, or two concepts tangled',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'no-circular-between-domains',
      comment:
        'domain folders (shared/<domain>, functions/<domain>) depend one way: two folders importing each other, even through others, are one domain split in two; a registry filled by the composition layer turns the back edge around',
      severity: 'error',
      scope: 'folder',
      from: { path: '^(shared|functions)/[^/]+' },
      to: { path: '^(shared|functions)/[^/]+', circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(node_modules|cdk\\.out|\\.data)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      extensions: ['.ts', '.js', '.mjs', '.json'],
    },
    skipAnalysisNotInRules: true,
    // Unchanged files are not parsed again (a clean clone, as in CI, has no cache).
    cache: { folder: 'node_modules/.cache/dependency-cruiser', strategy: 'content' },
  },
};
