/**
 * The documentation stays short and true: the README is read in five minutes (≤ 300 lines),
 * every relative link in a Markdown page reaches a file (and a heading, when it names one), every
 * command the README shows names an npm script or a `rollout-studio` command and options that
 * exist, and the tutorial's code blocks are the example's files (test/integration/tutorial.test.ts
 * trains those files), and the CHANGELOG keeps Keep a Changelog's shape and ships in both packages.
 */
import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { chatUsage } from '#trainer/bridges/cli/commands/chatCommand';
import { createModelUsage } from '#trainer/bridges/cli/commands/createModelCommand';
import { envUsage } from '#trainer/bridges/cli/commands/envCommand';
import { evalRewardUsage } from '#trainer/bridges/cli/commands/evalRewardCommand';
import { exportGgufUsage } from '#trainer/bridges/cli/commands/exportGgufCommand';
import { exportVerlUsage } from '#trainer/bridges/cli/commands/exportVerlCommand';
import { importUsage } from '#trainer/bridges/cli/commands/importVerlCommand';
import { pretrainUsage } from '#trainer/bridges/cli/commands/pretrainCommand';
import { pullUsage } from '#trainer/bridges/cli/commands/pullCommand';
import { rerollUsage } from '#trainer/bridges/cli/commands/rerollCommand';
import { runToolUsage } from '#trainer/bridges/cli/commands/runToolCommand';
import { serveToolsUsage } from '#trainer/bridges/cli/commands/serveToolsCommand';
import { serveUsage } from '#trainer/bridges/cli/commands/serveCommand';
import { evalUsage, trainUsage } from '#trainer/bridges/cli/commands/trainCommand';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const read = (file: string) => fs.readFileSync(path.join(ROOT, file), 'utf8');
const README_MAX_LINES = 300;

/** Every Markdown page of the repository that is ours (not dependencies, build output or vendored text). */
function markdownPages(): string[] {
  const skip = /^(node_modules|dist|out|test-output|\.git|\.vscode-test)(\/|$)|(^|\/)vendor\//;
  return (fs.readdirSync(ROOT, { recursive: true }) as string[])
    .map((f) => f.split(path.sep).join('/'))
    .filter((f) => f.endsWith('.md') && !skip.test(f) && !f.includes('/node_modules/'))
    .sort();
}

/** Markdown text without its fenced code blocks (a link-like text in code is not a link). */
const withoutCode = (text: string) => text.replace(/^```[^\n]*\n[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, '');

/** The targets of `[text](target)` and `![alt](target)` links. */
const linkTargets = (text: string) =>
  [...withoutCode(text).matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((m) => m[1]);

/** GitHub's anchors for a page's headings: lower case, punctuation dropped, spaces as hyphens, repeats numbered. */
export function headingAnchors(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const m of text.replace(/^```[^\n]*\n[\s\S]*?^```/gm, '').matchAll(/^#{1,6} (.+)$/gm)) {
    const base = m[1]
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

/** What is wrong with a relative link from `page`, or undefined when it reaches its file and heading. */
function brokenLink(page: string, target: string): string | undefined {
  if (/^[a-z][a-z+.-]*:/i.test(target)) return undefined; // https:, mailto:
  const [file, anchor] = target.split('#', 2) as [string, string | undefined];
  const resolved =
    file === '' ? page : path.posix.normalize(path.posix.join(path.posix.dirname(page), decodeURI(file)));
  if (resolved.startsWith('..')) return `${target}: leaves the repository`;
  if (!fs.existsSync(path.join(ROOT, resolved))) return `${target}: no such file (${resolved})`;
  if (anchor !== undefined && resolved.endsWith('.md') && !headingAnchors(read(resolved)).has(anchor))
    return `${target}: ${resolved} has no heading #${anchor}`;
  return undefined;
}

/** Each `rollout-studio` command (and export/import target) with its usage text, as `--help` prints it. */
const USAGE: Record<string, string> = {
  train: trainUsage,
  eval: evalUsage,
  env: envUsage,
  pull: pullUsage,
  'create-model': createModelUsage,
  pretrain: pretrainUsage,
  chat: chatUsage,
  'run-tool': runToolUsage,
  'eval-reward': evalRewardUsage,
  serve: serveUsage,
  'serve-tools': serveToolsUsage,
  'export gguf': exportGgufUsage,
  'export verl': exportVerlUsage,
  'import verl': importUsage,
  reroll: rerollUsage,
};

/** The commands a page shows: each line of its sh blocks and each inline `npm …`/`npx rollout-studio …`. */
function commandsIn(text: string): string[] {
  const blocks = [...text.matchAll(/^```sh\n([\s\S]*?)^```/gm)].flatMap((m) => m[1].split('\n'));
  const inline = [...text.matchAll(/`((?:npm|npx rollout-studio) [^`]+)`/g)].map((m) => m[1]);
  return [...blocks, ...inline].map((line) => line.replace(/\s+#.*$/, '').trim()).filter((line) => line !== '');
}

/** What is wrong with a shown command, or undefined when the script or command and its options exist. */
function brokenCommand(command: string, scripts: Record<string, string>): string | undefined {
  const words = command.replace(/^([A-Z_]+=\S+\s+)+/, '').split(/\s+/);
  if (words[0] === 'npm' && words[1] === 'run')
    return words[2] in scripts ? undefined : `${command}: package.json has no script "${words[2]}"`;
  if (words[0] === 'npm' && words[1] === 'test')
    return 'test' in scripts ? undefined : `${command}: package.json has no test script`;
  if (words[0] === 'npm')
    return ['install', 'pack', 'audit'].includes(words[1])
      ? undefined
      : `${command}: an npm command this test does not know`;
  if (words[0] !== 'npx' || words[1] !== 'rollout-studio') return `${command}: neither npm nor npx rollout-studio`;
  if (words[2] === '--help') return undefined;
  const name = words[2] === 'export' || words[2] === 'import' ? `${words[2]} ${words[3]}` : words[2];
  const usage = USAGE[name];
  if (usage === undefined) return `${command}: rollout-studio has no command "${name}"`;
  const unknown = words.filter(
    (w) => w.startsWith('--') && w !== '--help' && !new RegExp(`(^|[\\s\\[|])${w.split('=')[0]}\\b`).test(usage),
  );
  return unknown.length === 0 ? undefined : `${command}: "${name} --help" lists no ${unknown.join(', ')}`;
}

const CHANGE_TYPES = ['Added', 'Changed', 'Deprecated', 'Removed', 'Fixed', 'Security'];

/** What breaks Keep a Changelog in `text`: Unreleased first, then versions with dates, each change type once per release. */
export function changelogProblems(text: string, version: string): string[] {
  const problems: string[] = [];
  const releases = [...text.matchAll(/^## (.+)$/gm)].map((m) => m[1]);
  if (releases[0] !== '[Unreleased]') problems.push(`the first release is "${releases[0]}", not "[Unreleased]"`);
  for (const release of releases.slice(1)) {
    if (!/^\[\d+\.\d+\.\d+\] - \d{4}-\d{2}-\d{2}$/.test(release))
      problems.push(`"## ${release}" is not "## [x.y.z] - YYYY-MM-DD"`);
  }
  if (!releases.some((r) => r.startsWith(`[${version}] `)))
    problems.push(`no section for package.json's version ${version}`);
  for (const section of text.split(/^## /m).slice(1)) {
    const release = section.slice(0, section.indexOf('\n'));
    const types = [...section.matchAll(/^### (.+)$/gm)].map((m) => m[1]);
    for (const type of types.filter((t, i) => !CHANGE_TYPES.includes(t) || types.indexOf(t) !== i)) {
      problems.push(
        `${release}: "### ${type}" is ${CHANGE_TYPES.includes(type) ? 'repeated' : `not one of ${CHANGE_TYPES.join(', ')}`}`,
      );
    }
  }
  return problems;
}

describe('documentation', () => {
  it(`the README is at most ${README_MAX_LINES} lines`, () => {
    const lines = read('README.md').trimEnd().split('\n').length;
    assert.ok(
      lines <= README_MAX_LINES,
      `README.md has ${lines} lines; move the detail next to what it describes and link it`,
    );
  });

  it('every relative link of every Markdown page reaches a file, and the heading it names', () => {
    const pages = markdownPages();
    for (const page of [
      'README.md',
      'CHANGELOG.md',
      'trainer/ARCHITECTURE.md',
      'trainer/TROUBLESHOOTING.md',
      'test/bench/README.md',
      'examples/currency-agent/README.md',
    ]) {
      assert.ok(pages.includes(page), `${page} is among the pages checked`);
    }
    const broken = pages.flatMap((page) =>
      linkTargets(read(page))
        .flatMap((target) => brokenLink(page, target) ?? [])
        .map((why) => `${page}: ${why}`),
    );
    assert.deepEqual(broken, []);
  });

  it('every command the README shows is an npm script or a rollout-studio command with options it has', () => {
    const scripts = JSON.parse(read('package.json')).scripts as Record<string, string>;
    const commands = commandsIn(read('README.md'));
    assert.ok(commands.includes('npm run demo') && commands.includes('npm test'), 'the main job and the tests');
    assert.ok(commands.filter((c) => c.startsWith('npx rollout-studio ')).length >= 14, 'the CLI at a glance');
    assert.deepEqual(
      commands.flatMap((c) => brokenCommand(c, scripts) ?? []),
      [],
    );
  });

  it('the tutorial shows the example files as they are', () => {
    const dir = 'examples/currency-agent';
    const blocks = Object.fromEntries(
      [...read(`${dir}/README.md`).matchAll(/^```ts (\S+)\n([\s\S]*?)^```/gm)].map((m) => [m[1], m[2]]),
    );
    const files = fs.readdirSync(path.join(ROOT, dir)).filter((f) => f.endsWith('.ts'));
    assert.deepEqual(Object.keys(blocks).sort(), files.sort());
    for (const file of files)
      assert.equal(blocks[file], read(`${dir}/${file}`), `${dir}/README.md's block for ${file}`);
  });

  it('the CHANGELOG follows Keep a Changelog and ships in the npm package and the .vsix', () => {
    const manifest = JSON.parse(read('package.json')) as { version: string; files: string[] };
    assert.deepEqual(changelogProblems(read('CHANGELOG.md'), manifest.version), []);
    assert.ok(manifest.files.includes('CHANGELOG.md'), "package.json's files (the npm tarball) has CHANGELOG.md");
    assert.ok(
      read('.vscodeignore').split('\n').includes('!CHANGELOG.md'),
      '.vscodeignore keeps CHANGELOG.md in the .vsix',
    );
  });

  it('the checks catch what they look for (planted mistakes)', () => {
    const scripts = { demo: '', test: '' };
    assert.match(brokenLink('README.md', 'no/such/file.md') ?? '', /no such file/);
    assert.match(brokenLink('README.md', 'CHANGELOG.md#no-such-heading') ?? '', /has no heading #no-such-heading/);
    assert.match(brokenLink('trainer/ARCHITECTURE.md', 'README.md') ?? '', /no such file \(trainer\/README.md\)/);
    assert.equal(brokenLink('trainer/ARCHITECTURE.md', '../README.md#install'), undefined);
    assert.deepEqual([...headingAnchors('# A: `b c`\n## A: b c\n```sh\n# not a heading\n```\n')], ['a-b-c', 'a-b-c-1']);
    assert.match(brokenCommand('npm run no-such-script', scripts) ?? '', /no script "no-such-script"/);
    assert.match(brokenCommand('npx rollout-studio trian config.ts', scripts) ?? '', /no command "trian"/);
    assert.match(
      brokenCommand('npx rollout-studio train config.ts --no-such-flag', scripts) ?? '',
      /lists no --no-such-flag/,
    );
    assert.match(brokenCommand('npx rollout-studio export onnx RUN', scripts) ?? '', /no command "export onnx"/);
    assert.equal(brokenCommand('ONNXRUNTIME_NODE_INSTALL=skip npm install x.tgz', scripts), undefined);
    assert.deepEqual(linkTargets('[a](x.md) `[b](y.md)`\n```\n[c](z.md)\n```\n![d](e.png "title")'), ['x.md', 'e.png']);
    const changelog =
      '# Changelog\n\n## [Unreleased]\n\n### Added\n\n- a\n\n## [0.1.0] - 2026-12-05\n\n### Added\n\n- b\n';
    assert.deepEqual(changelogProblems(changelog, '0.1.0'), []);
    assert.deepEqual(changelogProblems(changelog.replace('- a\n', '- a\n\n### Added\n\n- c\n'), '0.1.0'), [
      '[Unreleased]: "### Added" is repeated',
    ]);
    assert.deepEqual(changelogProblems(changelog.replace('### Added\n\n- b', '### New\n\n- b'), '0.1.0'), [
      `[0.1.0] - 2026-12-05: "### New" is not one of ${CHANGE_TYPES.join(', ')}`,
    ]);
    assert.deepEqual(changelogProblems(changelog.replace(' - 2026-12-05', ''), '0.1.0'), [
      '"## [0.1.0]" is not "## [x.y.z] - YYYY-MM-DD"',
      "no section for package.json's version 0.1.0",
    ]);
    assert.deepEqual(changelogProblems(changelog, '0.2.0'), ["no section for package.json's version 0.2.0"]);
  });
});
