/**
 * Re-rolls from a point of a recorded trajectory, with the real shipped base model: with the
 * run's own checkpoint, sampling and seed and its recorded tool results, a re-roll reproduces the
 * original trajectory token for token — any member of the batch, from any cut; an edited tool
 * result changes what follows but keeps the prefix; branches are saved apart from the run's data.
 */
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { RunStoreReader, branchesOf } from '#trainer/contract/runstore';
import { BranchSet, decodeInt32, type TrajectoryRecord } from '#trainer/contract/protocol';
import { startCli } from '../../helpers/cliProcess';
import { generatedTurns } from '#trainer/pipeline/rollout/restoreState';
import { reroll, type RerollRequest } from '#trainer/pipeline/training/reroll/reroll';
import { TrainingRun } from '#trainer/pipeline/training/trainingRun';
import type { LoadedConfig } from '#trainer/pipeline/training/config/trainingConfig';
import { loadConfig } from '#trainer/bridges/usercode/loadConfig';
import { createTrainingFixture, type TrainingFixture } from '../../helpers/trainingFixture';

let fixture: TrainingFixture;
let loaded: LoadedConfig;
let runDir: string;
let reader: RunStoreReader;

before(async () => {
  fixture = createTrainingFixture();
  const config = fixture.writeConfig('reroll.config.ts', {
    model: "{ path: 'rollout-studio:base', lora: false }",
    sft: '',
    steps: '2',
    evaluation: '{ samples: 3, every: 0 }',
    rollout:
      '{ promptsPerStep: 2, budget: { maxTurns: 3, maxNewTokensPerTurn: 64, maxTotalTokens: 768, maxToolResultTokens: 64 }, systemPrompt: SYSTEM_PROMPT, templateKwargs: { enable_thinking: false } }',
    toolCassette: '{ record: true }',
  });
  loaded = await loadConfig(config);
  runDir = path.join(fixture.dir, 'runs', 'parent');
  const result = await new TrainingRun(loaded, { inProcessDevice: true, runDir, log: () => undefined }).run();
  assert.equal(result.run.status, 'finished');
  reader = new RunStoreReader(runDir);
});
after(() => fixture?.cleanup());

const ids = (t: TrajectoryRecord) => Array.from(decodeInt32(t.tokens.ids));

function request(parent: TrajectoryRecord, extra: Partial<RerollRequest>): RerollRequest {
  return { runDir, set: 'train', step: parent.step, index: parent.index, cut: { turn: 0, at: 'start' }, ...extra };
}

/** Trajectories of step 2 that called a tool, latest in the batch first (their draws depend most on the others). */
function callers(): TrajectoryRecord[] {
  return reader
    .trajectories(2)
    .records.filter((t) =>
      generatedTurns(t).some((turn) => (turn.toolCalls?.length ?? 0) > 0 && !turn.toolCalls!.some((c) => c.error)),
    )
    .sort((a, b) => b.index - a.index);
}

describe('re-roll from a point', () => {
  it('with the run’s checkpoint, sampling, seed and recorded tool results reproduces the trajectory token for token', async () => {
    const parents = callers();
    assert.ok(parents.length > 0, 'the run made tool calls');
    const parent = parents[0];
    const turns = generatedTurns(parent);
    const callTurn = turns.findIndex((t) => (t.toolCalls?.length ?? 0) > 0);
    const cuts = [
      { turn: 0, at: 'start' as const },
      { turn: callTurn, at: 'call' as const },
      ...(turns.length > callTurn + 1 ? [{ turn: callTurn + 1, at: 'start' as const }] : []),
    ];
    for (const cut of cuts) {
      const { branches } = await reroll(loaded, request(parent, { cut }));
      assert.equal(branches.sampling.followsParent, true);
      assert.equal(branches.tools.source, 'cassette');
      assert.equal(branches.checkpoint.spec, 'step-1', 'step 2 was rolled out by the policy after step 1');
      const [branch] = branches.branches;
      assert.equal(
        branch.firstDivergence,
        null,
        `cut ${JSON.stringify(cut)}: the branch diverged at token ${branch.firstDivergence}`,
      );
      assert.deepEqual(ids(branch.trajectory), ids(parent));
      assert.equal(branch.trajectory.finishReason, parent.finishReason);
      assert.equal(branch.trajectory.rewards.outcome, parent.rewards.outcome);
      assert.deepEqual(
        branch.trajectory.turns.flatMap((t) => (t.toolCalls ?? []).map((c) => [c.observation, c.processReward])),
        parent.turns.flatMap((t) => (t.toolCalls ?? []).map((c) => [c.observation, c.processReward])),
        'the same observations and process rewards',
      );
      // Log-probs are recomputed from a one-chunk prefill of the prefix rather than the original's token-by-token cache: equal to float precision.
      const lp = (t: TrajectoryRecord) => t.turns.filter((x) => x.logprob).map((x) => x.logprob!.mean);
      lp(branch.trajectory).forEach((v, i) =>
        assert.ok(Math.abs(v - lp(parent)[i]) < 1e-3, `turn ${i}: mean log-prob ${v} vs ${lp(parent)[i]}`),
      );
    }
  });

  it('samples other tokens with another seed (so reproducing is not a foregone conclusion)', async () => {
    const parent = callers()[0];
    const { branches } = await reroll(loaded, request(parent, { seed: 12345, samples: 4 }));
    assert.equal(branches.sampling.followsParent, false);
    assert.ok(
      branches.branches.some((b) => b.firstDivergence !== null),
      'some branch differs from the parent',
    );
  });

  it('reproduces every member of a batch, not only the first', async () => {
    const batch = reader.trajectories(1).records;
    for (const parent of batch.filter((_, i) => i % 3 === 1)) {
      const { branches } = await reroll(loaded, request(parent, {}));
      assert.equal(branches.branches[0].firstDivergence, null, `trajectory ${parent.index} of step 1`);
    }
  });

  it('an edited tool result keeps the prefix, is what the policy sees, and is saved as a branch apart from the run', async () => {
    const parent = callers()[0];
    const turn = generatedTurns(parent).findIndex((t) => (t.toolCalls?.length ?? 0) > 0);
    const before = fs.readFileSync(path.join(runDir, 'rollouts', 'step-000002.jsonl'), 'utf8');
    const metricsBefore = fs.readFileSync(path.join(runDir, 'metrics.jsonl'), 'utf8');
    const text = 'Zebulon Quartermaine works for Nowhere Labs.';
    const { branches, file } = await reroll(
      loaded,
      request(parent, {
        cut: { turn, at: 'call' },
        edits: [{ kind: 'result', call: 0, text }],
        samples: 2,
        checkpoint: 'step-2',
      }),
    );
    assert.equal(branches.branches.length, 2);
    const cutAt = generatedTurns(parent)[turn].tokenEnd;
    assert.equal(branches.cut.tokenIndex, cutAt);
    for (const branch of branches.branches) {
      assert.deepEqual(
        ids(branch.trajectory).slice(0, cutAt),
        ids(parent).slice(0, cutAt),
        'the prefix, token for token',
      );
      assert.ok(branch.firstDivergence !== null && branch.firstDivergence >= cutAt);
      const call = branch.trajectory.turns.flatMap((t) => t.toolCalls ?? [])[
        generatedTurns(parent)
          .slice(0, turn)
          .reduce((n, t) => n + (t.toolCalls?.length ?? 0), 0)
      ];
      assert.equal(call.observation, text);
    }
    assert.equal(branches.checkpoint.spec, 'step-2');
    assert.ok(
      branchesOf(runDir, { set: 'train', step: 2, index: parent.index }).some(
        (b) => b.id === branches.id && path.join(runDir, 'branches', `${b.id}.json`) === file,
      ),
    );
    assert.equal(
      fs.readFileSync(path.join(runDir, 'rollouts', 'step-000002.jsonl'), 'utf8'),
      before,
      'the run’s rollouts are untouched',
    );
    assert.equal(fs.readFileSync(path.join(runDir, 'metrics.jsonl'), 'utf8'), metricsBefore, 'and its metrics');
  });

  it('an inserted message is rendered by the template’s append path after the kept tokens: after a turn’s results, or after the prompt', async () => {
    const parent = callers().find((t) => generatedTurns(t).length >= 2)!;
    assert.ok(parent, 'a trajectory that went on after its tool results');
    const turns = generatedTurns(parent);
    const hint = 'Hint: the answer is a city.';
    const later = await reroll(
      loaded,
      request(parent, { cut: { turn: 1, at: 'start' }, edits: [{ kind: 'message', role: 'user', content: hint }] }),
    );
    const branch = later.branches.branches[0].trajectory;
    // Everything up to the end of turn 0 is the parent's; the tool turn after it now carries the hint, then the generation prompt.
    assert.deepEqual(ids(branch).slice(0, turns[0].tokenEnd), ids(parent).slice(0, turns[0].tokenEnd));
    const toolTurn = branch.turns.find((t) => t.role === 'tool' && t.tokenStart >= turns[0].tokenEnd)!;
    assert.ok(
      toolTurn.text.includes(hint) &&
        toolTurn.text.includes(
          parent.turns.find((t) => t.role === 'tool' && t.tokenStart >= turns[0].tokenEnd)!.text.split('\n')[1],
        ),
      toolTurn.text,
    );
    assert.ok(
      toolTurn.text.indexOf(hint) > toolTurn.text.indexOf('tool_response'),
      'the hint follows the tool results',
    );
    assert.equal(later.branches.edits[0].kind, 'message');
    const first = await reroll(
      loaded,
      request(parent, { cut: { turn: 0, at: 'start' }, edits: [{ kind: 'message', role: 'user', content: hint }] }),
    );
    const promptTurns = first.branches.branches[0].trajectory.turns.filter((t) => t.role === 'user');
    assert.match(
      promptTurns.at(-1)!.text,
      /Hint: the answer is a city\./,
      'the prompt rendered with the message after its own',
    );
    await assert.rejects(
      reroll(
        loaded,
        request(parent, { cut: { turn: 0, at: 'call' }, edits: [{ kind: 'message', role: 'user', content: hint }] }),
      ),
      /an inserted message goes at the start of a turn/,
    );
  });

  it('the CLI prints the branches’ transcripts and rewards, or the branch set as JSON', async () => {
    const parent = callers()[0];
    const turn = generatedTurns(parent).findIndex((t) => (t.toolCalls?.length ?? 0) > 0);
    const resultFile = path.join(fixture.dir, 'edited-result.txt');
    fs.writeFileSync(resultFile, 'Nobody knows.');
    const args = [
      'reroll',
      runDir,
      '--step',
      '2',
      '--trajectory',
      String(parent.index),
      '--turn',
      String(turn),
      '--edit-result',
      resultFile,
      '--checkpoint',
      'best',
      '-n',
      '2',
    ];
    const text = await startCli(args, { cwd: fixture.dir }).done;
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /^parent: \w+ · outcome -?\d\.\d\d · process -?\d\.\d\d · total -?\d\.\d\d$/m);
    assert.equal(text.stdout.match(/^──── branch \d · .* · diverges at token \d+ ────$/gm)?.length, 2);
    assert.equal(text.stdout.match(/^═══ step 2 · #\d ·/gm)?.length, 2, 'each branch’s transcript');
    assert.match(text.stdout, /Nobody knows\./);
    assert.match(text.stdout, /^saved 2 branches in .*branches[/\\].*\.json$/m);
    const json = await startCli([...args.slice(0, -2), '-n', '1', '--json'], { cwd: fixture.dir }).done;
    assert.equal(json.code, 0, json.stderr);
    const set = BranchSet.parse(JSON.parse(json.stdout));
    assert.deepEqual(
      [set.parent, set.cut.at, set.edits, set.checkpoint.spec, set.branches.length],
      [
        { set: 'train', step: 2, index: parent.index, rowId: parent.rowId },
        'call',
        [{ kind: 'result', call: 0, text: 'Nobody knows.' }],
        'best',
        1,
      ],
    );
    const bad = await startCli(['reroll', runDir, '--step', '2', '--trajectory', '0'], { cwd: fixture.dir }).done;
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--turn is required/);
  });

  it('refuses a cut the trajectory does not have, naming it', async () => {
    const parent = reader.trajectories(2).records[0];
    await assert.rejects(
      reroll(loaded, request(parent, { cut: { turn: 9, at: 'start' } })),
      /has \d+ generated turns; there is no turn 9/,
    );
  });
});
