// The third-party packages esbuild bundled into what ships (the trainer, the extension, the
// panels), with their versions and licences, as dist/THIRD_PARTY.md (for people) and
// dist/sbom.cdx.json (a CycloneDX SBOM, for scanners: `osv-scanner scan --sbom`, grype,
// Dependency-Track). They are devDependencies of this package (bundled, not installed), so
// `npm audit --omit=dev` and licence scanners that read package.json miss them: these files name
// them. test/unit/build/thirdParty.test.ts checks both against the bundles' source maps.
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
  const names = fs
    .readdirSync(folder)
    .filter((f) => /^(licen[cs]e|copying|notice)([.-][\w.-]+)?$/i.test(f))
    .sort();
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
      const entry = packages.get(key) ?? {
        name: found.name,
        version: manifest.version,
        license: licenseOf(manifest),
        text: licenceTexts(path.join(root, found.folder)),
        into: new Set(),
      };
      entry.into.add(label);
      packages.set(key, entry);
    }
  }
  const rows = [...packages.values()].sort(
    (a, b) => a.name.localeCompare(b.name) || a.version.localeCompare(b.version),
  );
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
    ...rows.flatMap((r) => [
      `### ${r.name}@${r.version}`,
      '',
      r.text
        ? ['~~~text', r.text, '~~~'].join('\n')
        : `(the package has no licence file; its package.json says ${r.license})`,
      '',
    ]),
  ].join('\n');
  fs.writeFileSync(path.join(root, 'dist', 'THIRD_PARTY.md'), text);
  writeSbom(root, rows);
  return rows;
}

/** `pkg:npm/%40scope/name@1.2.3`: the package URL scanners match advisories by. */
function purl(name, version) {
  return `pkg:npm/${name.startsWith('@') ? `%40${name.slice(1)}` : name}@${version}`;
}

/**
 * dist/sbom.cdx.json: the same packages as a CycloneDX 1.5 bill of materials. No timestamp or
 * serial number (both optional), so the same sources build the same file.
 */
function writeSbom(root, rows) {
  const self = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
  const component = (name, version, license, extra = {}) => {
    const scoped = name.startsWith('@')
      ? { group: name.slice(0, name.indexOf('/')), name: name.slice(name.indexOf('/') + 1) }
      : { name };
    return {
      type: 'library',
      'bom-ref': purl(name, version),
      ...scoped,
      version,
      purl: purl(name, version),
      // One SPDX expression each: a single id is one too, and "MIT OR Apache-2.0" needs no splitting.
      ...(license && license !== 'UNKNOWN' ? { licenses: [{ expression: license }] } : {}),
      ...extra,
    };
  };
  const bom = {
    bomFormat: 'CycloneDX',
    specVersion: '1.5',
    version: 1,
    metadata: {
      component: component(self.name, self.version, self.license, { type: 'application' }),
      properties: [
        {
          name: 'rollout-studio:scope',
          value: 'packages esbuild bundled into dist/ (not the installed dependencies, which npm audit covers)',
        },
      ],
    },
    components: rows.map((r) =>
      component(r.name, r.version, r.license, {
        properties: [{ name: 'rollout-studio:bundled-into', value: [...r.into].sort().join(', ') }],
      }),
    ),
  };
  fs.writeFileSync(path.join(root, 'dist', 'sbom.cdx.json'), JSON.stringify(bom, null, 2) + '\n');
}
