// The architecture's boundaries, checked by `npm test` (test/unit/architecture/boundaries.test.ts)
// and by hand with `npx depcruise trainer extension webview`.
//
// 1. The trainer is in tiers, each a folder, and its rooms depend in one direction:
//      contract/      what the trainer, the extension and the webviews share (usable everywhere)
//      foundations/   engine ← models; data ← tools ← mcp
//      pipeline/      rollout ← rewards ← rl ← training (the stages, in order)
//      bridges/       usercode, verl, serve, environment, authoring, cli
//      bases/         recipes/ (the shipped bases' recipes) and weights/ (what they made)
//    A room may import only the rooms listed for it below (and itself, node's built-ins and npm
//    packages): no foundation imports the pipeline, no stage imports a later one, and nothing
//    but a bridge or a recipe imports training.
// 2. The extension imports nothing of the trainer but trainer/contract/, and cannot reach
//    onnxruntime, webgpu, esbuild or the engine even indirectly: native modules do not belong
//    in the extension host. The webviews (browser code) import only the protocol's schemas.
// 3. The trainer never imports `vscode`, shipped code never imports test code, and there are
//    no import cycles.

const ENGINE = 'foundations/engine';
const MODELS = 'foundations/models';
const TOOLS = 'foundations/tools';
const DATA = 'foundations/data';
const MCP = 'foundations/mcp';
const HTTP = 'foundations/http';
const ROLLOUT = 'pipeline/rollout';
const REWARDS = 'pipeline/rewards';
const RL = 'pipeline/rl';
const TRAINING = 'pipeline/training';

/** Room (a folder under trainer/) → the other trainer rooms it may import. */
const TRAINER_ROOMS = {
  contract: [],
  // foundations
  [ENGINE]: [],
  [MODELS]: [ENGINE, 'contract'],
  [DATA]: ['contract'],
  [TOOLS]: [DATA, 'contract'],
  // Tools served by MCP servers, as Tool instances.
  [MCP]: [TOOLS, 'contract', 'version.ts'],
  // What keeps a local HTTP server closed to web pages and bounded (serve-tools, the chat endpoint).
  [HTTP]: [],
  // the pipeline
  [ROLLOUT]: [MODELS, TOOLS, DATA, HTTP, 'contract'],
  [REWARDS]: [ROLLOUT, TOOLS, DATA, 'contract'],
  [RL]: [ENGINE, MODELS, ROLLOUT, REWARDS, 'contract'],
  [TRAINING]: [ENGINE, MODELS, TOOLS, MCP, DATA, HTTP, ROLLOUT, REWARDS, RL, 'contract', 'version.ts'],
  // the bridges (cli/ may import anything)
  'bridges/environment': [ENGINE, 'contract'],
  // Finding a tool or reward in a user's module (usercode/selectTool.ts, exportPath.ts).
  'bridges/authoring': [REWARDS, ROLLOUT, TOOLS, MCP, DATA, 'contract', 'bridges/usercode'],
  // Rewards too: a config's rewards run in a reward worker (usercode/rewardHost.ts).
  'bridges/usercode': [TOOLS, DATA, ROLLOUT, REWARDS, TRAINING, 'contract', 'index.ts'],
  // verl's formats in and out (export of datasets and settings, import of its rollout dumps).
  'bridges/verl': [DATA, MODELS, ROLLOUT, 'contract', TRAINING, 'version.ts'],
  // A config's tools and rewards served over HTTP (MCP and the reward endpoint).
  'bridges/serve': [
    DATA,
    MCP,
    HTTP,
    MODELS,
    ENGINE,
    REWARDS,
    ROLLOUT,
    'contract',
    TOOLS,
    TRAINING,
    'bridges/verl',
    'version.ts',
  ],
  // The pretraining recipes of the shipped bases: a generated corpus (chats in a model's
  // template, tool schemas) trained with the SFT trainer, checkpointed as a training run is.
  'bases/recipes': [ENGINE, MODELS, ROLLOUT, TOOLS, RL, TRAINING, 'contract'],
};

/** `pipeline/rl` → `rl`: the last segment names the room in rule names. */
const short = (room) => room.split('/').pop().replace('.ts', '');

const roomRules = Object.entries(TRAINER_ROOMS).map(([room, allowed]) => ({
  name: `trainer-${short(room)}-imports-only-${allowed.length ? allowed.map(short).join('-') : 'itself'}`,
  comment: `trainer/${room}/ may import only ${allowed.length ? allowed.map((r) => `trainer/${r}`).join(', ') : 'itself'} (the rooms below it)`,
  severity: 'error',
  from: { path: `^trainer/${room}/` },
  to: {
    path: '^trainer/',
    pathNot: `^trainer/(${[room, ...allowed].map((r) => r.replace('.', '\\.')).join('|')})(/|$)`,
  },
}));

module.exports = {
  forbidden: [
    ...roomRules.map((rule) =>
      // The engine may name the protocol's provider names (a type, erased at run time).
      rule.from.path === `^trainer/${ENGINE}/`
        ? { ...rule, to: { ...rule.to, dependencyTypesNot: ['type-only'] } }
        : rule,
    ),
    {
      name: 'trainer-engine-types-only-from-protocol',
      comment: 'the engine may import types (only) from trainer/contract/protocol',
      severity: 'error',
      from: { path: `^trainer/${ENGINE}/` },
      to: { path: '^trainer/', pathNot: `^trainer/(${ENGINE}|contract/protocol)/` },
    },
    {
      name: 'extension-imports-only-trainer-contract',
      comment: 'the extension talks to the trainer through trainer/contract/ (schemas, run store, transcript) only',
      severity: 'error',
      from: { path: '^extension/' },
      to: { path: '^trainer/', pathNot: '^trainer/contract/' },
    },
    {
      name: 'extension-never-reaches-native-modules-or-engine',
      comment:
        'onnxruntime, webgpu, esbuild and the engine never load in the extension host, not even through another module',
      severity: 'error',
      from: { path: '^extension/' },
      to: {
        path: `(^|/)node_modules/(onnxruntime-node|onnxruntime-common|onnxruntime-web|webgpu|esbuild)/|^trainer/${ENGINE}/`,
        reachable: true,
      },
    },
    {
      name: 'webview-imports-only-the-protocol',
      comment: 'the panels run in a browser: of the trainer they import only the protocol schemas',
      severity: 'error',
      from: { path: '^webview/' },
      to: { path: '^trainer/', pathNot: '^trainer/contract/protocol/' },
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
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
    },
  },
};
