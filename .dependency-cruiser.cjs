/**
 * Holdfast's layer rules (README "Layout"), checked by dependency-cruiser in `npm test`
 * (test/layers/layer-rules.test.ts runs `depcruise` over the source folders).
 *
 *   contract/            the leaf: imports nothing of the project
 *   client/              the SDK: only contract/ (and its own files) — it ships alone as @holdfast/client
 *   lock/                nothing of app/, cli/, client/, exporter/, server/; lock/core names no store and no HTTP
 *   exporter/            instruments lock/store's SPI; never lock/core or lock/http
 *   server/              the composition root: wires lock/, exporter/ and contract/ only; imported only by
 *                        the entry points (cli/run-server.ts) and by scripts/, demo/, bin/, test/, bench/
 *   app/                 the console: only contract/ (and its own); it reaches the server over HTTP
 *   alerts/, dashboards/ monitoring as code: only contract/ (dashboards also reuse alerts/' SLO and PromQL)
 *
 * Every rule is `error`: one violation fails the test.
 */

const PROJECT = '^(contract|client|lock|exporter|server|app|cli|bin|alerts|dashboards|scripts|demo|bench|test|deploy)/';

/** `from` may import nothing of the project but its own folders and `allowed` ones. */
function onlyImports(name, comment, from, allowed) {
  return {
    name,
    comment,
    severity: 'error',
    from: { path: from },
    to: { path: PROJECT, pathNot: allowed },
  };
}

module.exports = {
  forbidden: [
    onlyImports('contract-is-the-leaf', 'contract/ imports nothing of the project.', '^contract/', '^contract/'),
    onlyImports(
      'client-only-contract',
      'The SDK ships alone (@holdfast/client): it may import contract/ and its own files, nothing of the server.',
      '^client/',
      '^(client|contract)/',
    ),
    onlyImports(
      'app-only-contract',
      'The console talks to the server over HTTP only: no lock/, exporter/, cli/ or client/ code in app/.',
      '^app/',
      '^(app|contract)/',
    ),
    onlyImports('alerts-only-contract', 'Alert rules are generated from contract/ alone.', '^alerts/', '^(alerts|contract)/'),
    onlyImports(
      'dashboards-only-contract-and-alerts',
      "Dashboards are generated from contract/ and reuse alerts/' SLO and PromQL definitions (one source for a query); alerts/ never imports dashboards/.",
      '^dashboards/',
      '^(dashboards|alerts|contract)/',
    ),
    {
      name: 'lock-not-up',
      comment: 'The lock service knows nothing of the console, the CLI or the SDK.',
      severity: 'error',
      from: { path: '^lock/' },
      to: { path: '^(app|cli|client|bin|dashboards|alerts|demo|scripts|test)/' },
    },
    {
      name: 'lock-core-names-no-store',
      comment: 'lock/core works against the SPI (lock/store/spi.ts and its records, spi-records.ts) only: no store implementation, no opener.',
      severity: 'error',
      from: { path: '^lock/core/' },
      to: { path: '^lock/store/', pathNot: '^lock/store/spi(-records)?\\.ts$' },
    },
    {
      name: 'lock-core-no-http',
      comment: 'lock/core is transport-free: Fastify lives in lock/http.',
      severity: 'error',
      from: { path: '^lock/core/' },
      to: { path: '^lock/http/' },
    },
    {
      name: 'lock-core-no-http-framework',
      comment: 'lock/core is transport-free: no HTTP framework.',
      severity: 'error',
      from: { path: '^lock/core/' },
      to: { dependencyTypes: ['npm', 'npm-dev', 'npm-optional', 'npm-peer'], path: 'node_modules/(fastify|@fastify)/' },
    },
    {
      name: 'lock-store-only-down',
      comment: 'Stores implement the SPI: they never reach the core, HTTP or the observability adapters.',
      severity: 'error',
      from: { path: '^lock/store/' },
      to: { path: '^(lock/core|lock/http|exporter)/' },
    },
    {
      name: 'exporter-not-core-or-http',
      comment: 'exporter/ instruments the store SPI and renders metrics; it never imports lock/core or lock/http.',
      severity: 'error',
      from: { path: '^exporter/' },
      to: { path: '^(lock/core|lock/http|app|cli|client)/' },
    },
    {
      name: 'lock-not-exporter',
      comment:
        'exporter/ imports lock/store/spi.ts, so lock/ must not import exporter/ (the folders would import each other). ' +
        'lock/core and lock/http report through contract/lock-events.ts and contract/http-events.ts; server/ plugs exporter/ in.',
      severity: 'error',
      from: { path: '^lock/' },
      to: { path: '^exporter/' },
    },
    onlyImports(
      'server-wires-lock-and-exporter',
      'server/ is the composition root: it wires lock/, exporter/ and contract/, nothing else of the project.',
      '^server/',
      '^(server|lock|exporter|contract)/',
    ),
    {
      name: 'server-only-from-entry-points',
      comment:
        'Nothing below the composition root imports it: only `holdfast server` (cli/run-server.ts) and the ' +
        'tooling around the product (bin/, scripts/, demo/, test/, bench/) start a server.',
      severity: 'error',
      from: { pathNot: '^(server/|cli/run-server\\.ts$|bin/|scripts/|demo/|test/|bench/)' },
      to: { path: '^server/' },
    },
    {
      name: 'no-circular',
      comment: 'No module imports itself through others.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
  ],
  allowed: [],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)(node_modules|dist|\\.next)/' },
    tsConfig: { fileName: 'tsconfig.json' },
    tsPreCompilationDeps: true,
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      extensions: ['.ts', '.tsx', '.js', '.mjs', '.cjs', '.json'],
    },
  },
};

