/**
 * `rollout-studio reroll <run>` without --config runs the config its run.json names — so a
 * repository that plants `.rollout/runs/r1/run.json` with `configPath: "evil.ts"` must not get
 * evil.ts run. The recorded config runs only when it is what a run records: an absolute, plain
 * path (a config edited since the run runs with a warning). Each refusal names run.json, the
 * field and what was expected; the hostile config writes a marker if it ever runs.
 */
import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { startCli } from '../../helpers/cliProcess';
import { writeRecordedRun } from '../../fixtures/recordedRun';

/** A hostile repository: evil.ts (writes `marker` when evaluated) and a recorded run whose run.json names it. */
function hostileRepository(configPath: (repo: string) => string, sha256?: (source: string) => string) {
  const repo = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'hostile-')));
  const marker = path.join(repo, 'evil-ran');
  const source = `import * as fs from 'node:fs';\nfs.writeFileSync(${JSON.stringify(marker)}, 'ran');\nexport default {};\n`;
  fs.writeFileSync(path.join(repo, 'evil.ts'), source);
  const runDir = writeRecordedRun(path.join(repo, '.rollout', 'runs', 'r1'), {
    steps: 1,
    batch: 2,
    groupSize: 2,
    seed: 3,
    status: 'finished',
  });
  const runJson = path.join(runDir, 'run.json');
  const run = JSON.parse(fs.readFileSync(runJson, 'utf8')) as Record<string, unknown>;
  const hash = sha256?.(source);
  fs.writeFileSync(
    runJson,
    JSON.stringify({ ...run, configPath: configPath(repo), ...(hash ? { configSha256: hash } : {}) }),
  );
  return { repo, runDir, marker };
}

const sha256 = (text: string) => crypto.createHash('sha256').update(text).digest('hex');

async function reroll(repo: string, runDir: string) {
  return startCli(['reroll', runDir, '--step', '1', '--trajectory', '0', '--turn', '0'], { cwd: repo }).done;
}

describe('reroll runs only the run’s own recorded config', () => {
  it('refuses a relative configPath in run.json, naming the file and field, and runs nothing', async () => {
    const { repo, runDir, marker } = hostileRepository(() => 'evil.ts');
    const result = await reroll(repo, runDir);
    assert.equal(fs.existsSync(marker), false, 'evil.ts ran');
    assert.equal(result.code, 2, result.stderr);
    assert.match(
      result.stderr,
      /r1[/\\]run\.json: configPath is "evil\.ts", a relative path; a run records the absolute path/,
    );
    assert.match(result.stderr, /pass --config FILE/);
  });

  it('refuses an absolute path that leads back through the process (/proc/self/cwd)', async () => {
    const { repo, runDir, marker } = hostileRepository(() => '/proc/self/cwd/evil.ts', sha256);
    const result = await reroll(repo, runDir);
    assert.equal(fs.existsSync(marker), false, 'evil.ts ran');
    assert.match(
      result.stderr,
      /run\.json: configPath is "\/proc\/self\/cwd\/evil\.ts"; expected the plain absolute path/,
    );
  });

  it('says so when the run’s own config changed since the run (configSha256), and re-rolls with it as it is', async () => {
    // An edited config is still the run's own (users edit configs between runs); the hash is no
    // defence against a planted run.json, which can carry any hash: the editor's trust gate is.
    const { repo, runDir, marker } = hostileRepository(
      (r) => path.join(r, 'evil.ts'),
      () => sha256('the config the run trained with'),
    );
    const result = await reroll(repo, runDir);
    assert.match(
      result.stderr,
      /warning: .*evil\.ts changed since the run \(sha256 [0-9a-f]{12}… where run\.json recorded/,
    );
    assert.equal(fs.existsSync(marker), true, 'the recorded absolute path is loaded');
  });

  it('runs the recorded config when it is the run’s own: absolute, with the recorded bytes', async () => {
    // The control: the same repository with a consistent record gets past the check to load the
    // config (which then fails: evil.ts is no defineConfig). The check is not refusing everything.
    const { repo, runDir, marker } = hostileRepository((r) => path.join(r, 'evil.ts'), sha256);
    const result = await reroll(repo, runDir);
    assert.equal(fs.existsSync(marker), true, result.stderr);
    assert.match(result.stderr, /not a config made by defineConfig/);
  });
});
