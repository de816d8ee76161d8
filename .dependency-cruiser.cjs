// The architecture's boundaries, checked by `npm test` (test/unit/architecture/boundaries.test.ts)
// and by hand with `npx depcruise trainer extension webview`.
//
// 1. The trainer's rooms depend in one direction. Each room below may import only the rooms
//    listed for it (and itself, node's built-ins and npm packages):
//      engine ← models ← rollout ← rewards ← rl ← training ← usercode ← cli
//    with shared/ (protocol, run store, transcript) and util/ usable from every room above the
//    engine, tools/ and data/ from rollout up, mcp/ (tools from MCP servers) from training up,
//    verl/ and serve/ (the bridge to verl) above training, and pretrain/ (the base's recipe)
//    beside them.
// 2. The extension imports nothing of the trainer but trainer/shared/, and cannot reach
//    onnxruntime, webgpu, esbuild or the engine even indirectly: native modules do not belong
//    in the extension host. The webviews (browser code) import only the protocol's schemas.
// 3. The trainer never imports `vscode`, shipped code never imports test code, and there are
//    no import cycles.

/** Room → the other trainer rooms it may import. */
const TRAINER_ROOMS = {
  util: [],
  shared: [],
  engine: ['util'],
  models: ['engine', 'shared', 'util'],
  tools: ['data', 'shared', 'util'],
  data: ['shared', 'util'],
  rollout: ['models', 'tools', 'data', 'shared', 'util'],
  rewards: ['rollout', 'tools', 'data', 'shared', 'util'],
  rl: ['engine', 'models', 'rollout', 'rewards', 'shared', 'util'],
  environment: ['engine', 'shared', 'util'],
  // Tools served by MCP servers, as Tool instances.
  mcp: ['tools', 'shared', 'util', 'version.ts'],
  authoring: ['rewards', 'rollout', 'tools', 'mcp', 'data', 'shared', 'util'],
  training: ['engine', 'models', 'tools', 'mcp', 'data', 'rollout', 'rewards', 'rl', 'shared', 'util', 'version.ts'],
  usercode: ['tools', 'training', 'shared', 'util', 'index.ts'],
  // verl's formats in and out (export of datasets and settings, import of its rollout dumps).
  verl: ['data', 'models', 'rollout', 'shared', 'training', 'util', 'version.ts'],
  // The pretraining recipe of the shipped base: a generated corpus (chats in a model's template,
  // tool schemas) trained with the SFT trainer, checkpointed as a training run is.
  pretrain: ['engine', 'models', 'rollout', 'tools', 'rl', 'training', 'shared', 'util'],
  // A config's tools and rewards served over HTTP (MCP and the reward endpoint).
  serve: ['data', 'mcp', 'rewards', 'rollout', 'shared', 'tools', 'training', 'verl', 'util', 'version.ts'],
};

const roomRules = Object.entries(TRAINER_ROOMS).map(([room, allowed]) => ({
  name: `trainer-${room}-imports-only-${allowed.length ? allowed.join('-') : 'itself'}`,
  comment: `trainer/${room}/ may import only ${allowed.length ? allowed.map((r) => `trainer/${r}`).join(', ') : 'itself'} (the rooms below it)`,
  severity: 'error',
  from: { path: `^trainer/${room}/` },
  to: { path: '^trainer/', pathNot: `^trainer/(${[room, ...allowed].map((r) => r.replace('.', '\\.')).join('|')})(/|$)` },
}));

module.exports = {
  forbidden: [
    ...roomRules.map((rule) =>
      // The engine may name the protocol's provider names (a type, erased at run time).
      rule.from.path === '^trainer/engine/' ? { ...rule, to: { ...rule.to, dependencyTypesNot: ['type-only'] } } : rule,
    ),
    {
      name: 'trainer-engine-types-only-from-protocol',
      comment: 'the engine may import types (only) from trainer/shared/protocol',
      severity: 'error',
      from: { path: '^trainer/engine/' },
      to: { path: '^trainer/', pathNot: '^trainer/(engine|util|shared/protocol)/' },
    },
    {
      name: 'extension-imports-only-trainer-shared',
      comment: 'the extension talks to the trainer through trainer/shared/ (schemas, run store, transcript) only',
      severity: 'error',
      from: { path: '^extension/' },
      to: { path: '^trainer/', pathNot: '^trainer/shared/' },
    },
    {
      name: 'extension-never-reaches-native-modules-or-engine',
      comment: 'onnxruntime, webgpu, esbuild and the engine never load in the extension host, not even through another module',
      severity: 'error',
      from: { path: '^extension/' },
      to: { path: '(^|/)node_modules/(onnxruntime-node|onnxruntime-common|onnxruntime-web|webgpu|esbuild)/|^trainer/engine/', reachable: true },
    },
    {
      name: 'webview-imports-only-the-protocol',
      comment: 'the panels run in a browser: of the trainer they import only the protocol schemas',
      severity: 'error',
      from: { path: '^webview/' },
      to: { path: '^trainer/', pathNot: '^trainer/shared/protocol/' },
    },
    {
      name: 'webview-no-node-builtins',
      comment: 'the panels run in a browser',
      severity: 'error',
      from: { path: '^webview/' },
      to: { dependencyTypes: ['core'] },
    },
    {
      name: 'trainer-never-imports-vscode',
      comment: 'the trainer is a library and a CLI usable without an editor',
      severity: 'error',
      from: { path: '^trainer/' },
      to: { path: '^vscode$|(^|/)node_modules/@types/vscode/' },
    },
    {
      name: 'shipped-code-never-imports-tests',
      comment: 'test helpers live under test/ and are not shipped',
      severity: 'error',
      from: { path: '^(trainer|extension|webview)/' },
      to: { path: '^test/' },
    },
    {
      name: 'no-import-cycles',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
  ],
  options: {
    tsConfig: { fileName: 'tsconfig.json' },
    // Type-only imports count too: they are dependencies of the design even when erased.
    tsPreCompilationDeps: true,
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(dist|out|test-output)/' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default', 'types'] },
  },
};
