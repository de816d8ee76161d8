// npm run package [-- --target linux-x64]: a platform-specific .vsix with vsce. The bundles in
// dist/ carry all JavaScript; of node_modules only the native modules travel, and of their
// binaries only the target platform's (vsce's platform targets keep one .vsix per platform).
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');
const manifest = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
const targetArg = process.argv.indexOf('--target');
const target = targetArg > 0 ? process.argv[targetArg + 1] : `${process.platform}-${process.arch}`;
const [platform, arch] = target.split('-');
const supported = ['linux-x64', 'linux-arm64', 'win32-x64', 'win32-arm64', 'darwin-arm64'];
if (!supported.includes(target)) {
  console.error(
    `package-vsix: unsupported target "${target}"; onnxruntime-node ships binaries for ${supported.join(', ')}`,
  );
  process.exit(2);
}

execFileSync(process.execPath, [path.join(root, '.build/build.mjs'), '--production'], { stdio: 'inherit', cwd: root });

const ortBinaries = `node_modules/onnxruntime-node/bin/napi-v6/${platform}/${arch}`;
const dawnBinaries = `node_modules/webgpu/dist/${platform === 'darwin' ? 'darwin-universal' : target}`;
// esbuild (compiles the user's tools and configs) finds its binary in @esbuild/<platform>-<arch>.
const esbuildBinaries = `node_modules/@esbuild/${target}`;
// sharp (decoding and resizing images) finds its binary and libvips in @img/sharp-<platform>-<arch>.
const sharpBinaries = [
  `node_modules/@img/sharp-${target}`,
  ...(platform === 'win32' ? [] : [`node_modules/@img/sharp-libvips-${target}`]),
];
for (const dir of [ortBinaries, dawnBinaries, esbuildBinaries, ...sharpBinaries]) {
  if (!fs.existsSync(path.join(root, dir))) {
    console.error(`package-vsix: ${dir} is missing; run npm install first`);
    process.exit(1);
  }
}
const ignoreFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'rollout-vsix-')), '.vscodeignore');
const rules =
  fs.readFileSync(path.join(root, '.vscodeignore'), 'utf8') +
  `\n!${ortBinaries}/**\n!${dawnBinaries}/**\n!${esbuildBinaries}/**\n${sharpBinaries.map((d) => `!${d}/**`).join('\n')}\n`;
fs.writeFileSync(ignoreFile, rules);

const out = path.join(root, 'dist', `${manifest.name}-${target}-${manifest.version}.vsix`);
// package.json's `files` says what the npm tarball holds (the trainer, its types, the examples);
// vsce refuses to package when a manifest has `files` and an ignore file is given too, and the
// .vsix needs the ignore file (its node_modules rules are per platform). So vsce runs while
// package.json has no `files`, and the original text is put back however vsce ends (an
// interrupt included: this process ignores it while vsce, which gets it too, exits).
const manifestFile = path.join(root, 'package.json');
const manifestText = fs.readFileSync(manifestFile, 'utf8');
const { files: _npmFiles, ...vsixManifest } = manifest;
const ignoreInterrupt = () => undefined;
process.on('SIGINT', ignoreInterrupt);
fs.writeFileSync(manifestFile, JSON.stringify(vsixManifest, null, 2) + '\n');
try {
  execFileSync(
    process.execPath,
    [
      path.join(root, 'node_modules/@vscode/vsce/vsce'),
      'package',
      '--target',
      target,
      '--ignoreFile',
      ignoreFile,
      '--out',
      out,
      '--skip-license',
    ],
    { stdio: 'inherit', cwd: root },
  );
} finally {
  fs.writeFileSync(manifestFile, manifestText);
  process.off('SIGINT', ignoreInterrupt);
}
fs.rmSync(path.dirname(ignoreFile), { recursive: true, force: true });
const size = fs.statSync(out).size;
console.log(`packaged ${path.relative(root, out)} (${(size / 2 ** 20).toFixed(1)} MiB)`);
