// The third-party packages esbuild bundled into what ships (the trainer, the extension, the
// panels), with their versions and licences, as dist/THIRD_PARTY.md. They are devDependencies
// of this package (bundled, not installed), so `npm audit --omit=dev` and licence scanners that
// read package.json miss them: this file names them. test/unit/build/thirdParty.test.ts checks it
// against the bundles' source maps.
import * as fs from 'node:fs';
import * as path from 'node:path';

/** `node_modules/@scope/name/…` or `node_modules/name/…` → the package's folder (the innermost node_modules). */
export function packageFolder(input) {
  const parts = input.split(/[\\/]/);
  const at = parts.lastIndexOf('node_modules');
  if (at < 0 || at + 1 >= parts.length) return undefined;
  const name = parts[at + 1].startsWith('@') ? parts.slice(at + 1, at + 3).join('/') : parts[at + 1];
  return { name, folder: [...parts.slice(0, at + 1), ...name.split('/')].join('/') };
}

/** The package's own licence and notice files, as it ships them (MIT, BSD and Apache ask that these travel with every copy). */
function licenceTexts(folder) {
  const names = fs.readdirSync(folder).filter((f) => /^(licen[cs]e|copying|notice)([.-][\w.-]+)?$/i.test(f)).sort();
  return names.map((f) => fs.readFileSync(path.join(folder, f), 'utf8').trim()).join('\n\n');
}

function licenseOf(pkg) {
  if (typeof pkg.license === 'string') return pkg.license;
  if (pkg.license && typeof pkg.license.type === 'string') return pkg.license.type;
  if (Array.isArray(pkg.licenses)) return pkg.licenses.map((l) => l.type ?? l).join(' OR ');
  return 'UNKNOWN';
}

/** Writes dist/THIRD_PARTY.md from esbuild metafiles, by bundle label (`trainer`, `extension`, `webview`). */
export function writeThirdParty(root, metafiles) {
  const packages = new Map();
  for (const [label, metafile] of Object.entries(metafiles)) {
    for (const input of Object.keys(metafile.inputs)) {
      const found = packageFolder(input);
      if (!found) continue;
      const manifest = JSON.parse(fs.readFileSync(path.join(root, found.folder, 'package.json'), 'utf8'));
      const key = `${found.name}@${manifest.version}`;
      const entry = packages.get(key) ?? { name: found.name, version: manifest.version, license: licenseOf(manifest), text: licenceTexts(path.join(root, found.folder)), into: new Set() };
      entry.into.add(label);
      packages.set(key, entry);
    }
  }
  const rows = [...packages.values()].sort((a, b) => a.name.localeCompare(b.name) || a.version.localeCompare(b.version));
  const text = [
    '# Third-party packages bundled into Rollout Studio',
    '',
    'esbuild bundles these into `dist/` (they are not installed as dependencies, so `npm audit --omit=dev` does not see them).',
    'Written by `.build/build.mjs` from the bundles’ metafiles.',
    '',
    '| package | version | licence | bundled into |',
    '|---|---|---|---|',
    ...rows.map((r) => `| ${r.name} | ${r.version} | ${r.license} | ${[...r.into].sort().join(', ')} |`),
    '',
    '## Licence texts',
    '',
    ...rows.flatMap((r) => [`### ${r.name}@${r.version}`, '', r.text ? ['~~~text', r.text, '~~~'].join('\n') : `(the package has no licence file; its package.json says ${r.license})`, '']),
  ].join('\n');
  fs.writeFileSync(path.join(root, 'dist', 'THIRD_PARTY.md'), text);
  return rows;
}
