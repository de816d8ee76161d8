/**
 * dist/THIRD_PARTY.md (and dist/sbom.cdx.json, for scanners) names every third-party package bundled into what ships, with the version
 * installed (issue 36: the bundled packages are devDependencies, so an audit of runtime
 * dependencies misses them). Checked against the bundles' own source maps, which list every
 * file esbuild put in — an independent reading of the same bundles. Needs `node .build/build.mjs`
 * (npm test builds first).
 */
import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';

const root = path.resolve(__dirname, '../../..');
const dist = path.join(root, 'dist');

/** Package name → version, of every node_modules file in the shipped bundles' source maps. */
function bundledPackages(): Map<string, string> {
  const maps = ['extension', 'trainer', 'webview'].flatMap((dir) =>
    fs
      .readdirSync(path.join(dist, dir))
      .filter((f) => f.endsWith('.js.map'))
      .map((f) => path.join(dist, dir, f)),
  );
  const found = new Map<string, string>();
  for (const map of maps) {
    const { sources } = JSON.parse(fs.readFileSync(map, 'utf8')) as { sources: string[] };
    for (const source of sources) {
      const resolved = path.resolve(path.dirname(map), source);
      const parts = resolved.split(path.sep);
      const at = parts.lastIndexOf('node_modules');
      if (at < 0) continue;
      const name = parts[at + 1].startsWith('@') ? `${parts[at + 1]}/${parts[at + 2]}` : parts[at + 1];
      const folder = [...parts.slice(0, at + 1), ...name.split('/')].join(path.sep);
      found.set(
        name,
        (JSON.parse(fs.readFileSync(path.join(folder, 'package.json'), 'utf8')) as { version: string }).version,
      );
    }
  }
  return found;
}

describe('dist/THIRD_PARTY.md', () => {
  it('lists every bundled package with its installed version and a licence, and ships in both packages', () => {
    const text = fs.readFileSync(path.join(dist, 'THIRD_PARTY.md'), 'utf8');
    const listed = new Map(
      [...text.matchAll(/^\| (\S+) \| (\S+) \| ([^|]+) \|/gm)]
        .filter((m) => m[1] !== 'package' && m[1] !== '---')
        .map((m) => [`${m[1]}@${m[2]}`, m[3].trim()]),
    );
    const bundled = bundledPackages();
    assert.ok(
      bundled.has('@modelcontextprotocol/sdk') && bundled.has('@huggingface/jinja'),
      'the source maps name the MCP SDK and jinja',
    );
    for (const [name, version] of bundled) {
      assert.ok(listed.has(`${name}@${version}`), `${name}@${version} is bundled but not listed`);
      assert.notEqual(listed.get(`${name}@${version}`), 'UNKNOWN', `${name} has a licence`);
    }
    // Each listed package's own licence text travels with it (MIT, BSD and Apache ask for that in every copy).
    for (const key of listed.keys())
      assert.match(
        text,
        new RegExp(
          `^### ${key.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}\n\n(~~~text\n[^]+?\n~~~|\\(the package has no licence file)`,
          'm',
        ),
        `${key}: its licence text`,
      );
    const sdk = text.slice(text.indexOf(`### @modelcontextprotocol/sdk@${bundled.get('@modelcontextprotocol/sdk')}`));
    assert.match(
      sdk,
      /^### \S+\n\n~~~text\n(MIT License\n\n)?Copyright[^]+?Permission is hereby granted, free of charge/,
      "the MCP SDK's MIT text itself",
    );
    const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { files: string[] };
    assert.ok(pkg.files.includes('dist/THIRD_PARTY.md'), 'in the npm package');
    assert.match(
      fs.readFileSync(path.join(root, '.vscodeignore'), 'utf8'),
      /^!dist\/THIRD_PARTY\.md$/m,
      'in the .vsix',
    );
  });
});

interface SbomComponent {
  type: string;
  'bom-ref': string;
  group?: string;
  name: string;
  version: string;
  purl: string;
  licenses?: { expression: string }[];
}

describe('dist/sbom.cdx.json', () => {
  it('is a CycloneDX bill of the same packages, each with the package URL scanners match advisories by, and ships in both packages', () => {
    const bom = JSON.parse(fs.readFileSync(path.join(dist, 'sbom.cdx.json'), 'utf8')) as {
      bomFormat: string;
      specVersion: string;
      metadata: { component: SbomComponent };
      components: SbomComponent[];
    };
    assert.equal(bom.bomFormat, 'CycloneDX');
    assert.equal(bom.specVersion, '1.5');
    const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as {
      name: string;
      version: string;
      files: string[];
    };
    assert.equal(bom.metadata.component.purl, `pkg:npm/${pkg.name}@${pkg.version}`);
    const bundled = bundledPackages();
    const inBom = new Map(bom.components.map((c) => [`${c.group ? `${c.group}/` : ''}${c.name}`, c]));
    const text = fs.readFileSync(path.join(dist, 'THIRD_PARTY.md'), 'utf8');
    // The same list as THIRD_PARTY.md (from esbuild's metafiles, which may also name a package whose code was all shaken out)…
    const listed = [...text.matchAll(/^\| (\S+) \| (\S+) \| [^|]+ \|/gm)]
      .map((m) => `${m[1]}@${m[2]}`)
      .filter((k) => !k.startsWith('package@') && !k.startsWith('---@'));
    assert.deepEqual(
      bom.components.map((c) => `${c.group ? `${c.group}/` : ''}${c.name}@${c.version}`).sort(),
      listed.sort(),
    );
    // …so every package the source maps show in the bundles.
    for (const [name, version] of bundled) {
      const component = inBom.get(name);
      assert.ok(component, `${name}@${version} is bundled but not in the SBOM`);
      assert.equal(component.version, version, name);
      assert.equal(component.purl, `pkg:npm/${name.replace(/^@/, '%40')}@${version}`, name);
      assert.equal(component['bom-ref'], component.purl);
      const licence = component.licenses?.[0]?.expression;
      assert.ok(
        licence && text.includes(`| ${name} | ${version} | ${licence} |`),
        `${name}: the licence THIRD_PARTY.md gives (${licence})`,
      );
    }
    assert.ok(pkg.files.includes('dist/sbom.cdx.json'), 'in the npm package');
    assert.match(
      fs.readFileSync(path.join(root, '.vscodeignore'), 'utf8'),
      /^!dist\/sbom\.cdx\.json$/m,
      'in the .vsix',
    );
  });
});
