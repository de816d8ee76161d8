// Builds every bundle with esbuild: the extension (CommonJS, `vscode` external), the trainer
// library and CLI (Node, native modules external), the webview apps (browser) and the test
// bundles that run inside VS Code. `--watch` rebuilds on change.
import * as esbuild from 'esbuild';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { writeThirdParty } from './thirdParty.mjs';

const root = path.resolve(import.meta.dirname, '..');
const watch = process.argv.includes('--watch');
const production = process.argv.includes('--production');

/** Every file under `dir` (relative to the root) whose name ends with one of `suffixes`. */
function filesUnder(dir, suffixes) {
  const abs = path.join(root, dir);
  if (!fs.existsSync(abs)) return [];
  return fs
    .readdirSync(abs, { recursive: true })
    .map((f) => path.join(dir, f))
    .filter((f) => suffixes.some((s) => f.endsWith(s)));
}

const common = {
  absWorkingDir: root,
  bundle: true,
  sourcemap: true,
  sourcesContent: false,
  minify: production,
  logLevel: 'warning',
  outdir: 'dist',
  target: 'node20',
};

/** onnxruntime-node, webgpu and sharp (images: libvips) carry native binaries and must stay real files at run time. */
const nativeModules = ['onnxruntime-node', 'webgpu', 'sharp'];
/** Resolved only when running from TypeScript sources (tests, development), never in a bundle. */
const sourceOnly = ['tsx', 'tsx/cjs'];
/** esbuild compiles the user's tools and configs at run time; its JS API finds its native binary itself and cannot be bundled. */
const trainerRuntimePackages = ['esbuild'];

const testEntries = Object.fromEntries(
  [...filesUnder('test/vscode', ['.ts']), ...filesUnder('test/desktop', ['.ts'])].map((f) => [
    f.replace(/\.ts$/, ''),
    f,
  ]),
);

/** The builds that ship, in the order of `builds` below. */
const SHIPPED = ['extension', 'trainer', 'webview'];

const builds = [
  {
    ...common,
    // TypeScript's parser (for the code lenses) is a bundle of its own, loaded on first use.
    entryPoints: {
      'extension/extension': 'extension/extension.ts',
      'extension/definitions': 'extension/authoring/definitions.ts',
    },
    platform: 'node',
    format: 'cjs',
    external: ['vscode'],
  },
  {
    ...common,
    // The device worker runs onnxruntime in its own thread, the tool worker the user's tools, the reward worker their rewards, the agent host a user's agent module (a process of its own); they sit next to the other trainer bundles.
    entryPoints: {
      'trainer/cli': 'trainer/bridges/cli/main.ts',
      'trainer/index': 'trainer/index.ts',
      'trainer/device-worker': 'trainer/foundations/engine/device/worker.ts',
      'trainer/tool-worker': 'trainer/bridges/usercode/toolWorker.ts',
      'trainer/reward-worker': 'trainer/bridges/usercode/rewardWorker.ts',
      'trainer/agent-host': 'trainer/bridges/usercode/agentHost.ts',
    },
    platform: 'node',
    format: 'cjs',
    external: [...nativeModules, ...sourceOnly, ...trainerRuntimePackages],
  },
  {
    ...common,
    entryPoints: Object.fromEntries(
      fs
        .readdirSync(path.join(root, 'webview'), { withFileTypes: true })
        .filter((d) => d.isDirectory() && fs.existsSync(path.join(root, 'webview', d.name, 'main.ts')))
        .map((d) => [`webview/${d.name}`, `webview/${d.name}/main.ts`]),
    ),
    platform: 'browser',
    format: 'iife',
    target: 'chrome120',
  },
  {
    ...common,
    entryPoints: testEntries,
    platform: 'node',
    format: 'cjs',
    external: ['vscode', 'mocha', '@vscode/test-electron', ...nativeModules],
  },
];

if (watch) {
  for (const options of builds) {
    const ctx = await esbuild.context({ ...options, logLevel: 'info' });
    await ctx.watch();
  }
  console.log('[watch] watching for changes');
} else {
  const started = Date.now();
  const results = await Promise.all(
    builds.map((options, i) => esbuild.build({ ...options, metafile: i < SHIPPED.length })),
  );
  // What ships (not the test bundles): its bundled third-party packages, named with their licences.
  writeThirdParty(root, Object.fromEntries(SHIPPED.map((label, i) => [label, results[i].metafile])));
  fs.chmodSync(path.join(root, 'dist/trainer/cli.js'), 0o755);
  console.log(`built dist/ in ${Date.now() - started} ms`);
}
