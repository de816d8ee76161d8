import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import {
  decodeFloat32,
  decodeInt32,
  decodeUint8,
  encodeFloat32,
  encodeInt32,
  encodeUint8,
  PROTOCOL_VERSION,
  type RunRecord,
  type TrajectoryRecord,
} from '#trainer/contract/protocol';
import { listRuns, RunStoreReader, RunStoreWriter } from '#trainer/contract/runstore';
import { dropRecordsAfterStep } from '#trainer/contract/runstore/writer';

function tmpDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'runstore-test-'));
}

function runRecord(id: string): RunRecord {
  return {
    protocol: PROTOCOL_VERSION,
    id,
    name: 'test run',
    status: 'running',
    createdAt: new Date().toISOString(),
    algorithm: 'grpo',
    device: 'cpu',
    seed: 1,
    totalSteps: 3,
    model: { path: '/m', family: 'qwen3', parameters: 10, trainableParameters: 2 },
    versions: { rolloutStudio: '0.1.0', node: process.versions.node },
    config: { steps: 3 },
  };
}

function trajectory(step: number, index: number): TrajectoryRecord {
  const pieces = [
    '<|im_start|>',
    'user',
    '\n',
    'hi',
    '<|im_end|>',
    '\n',
    '<|im_start|>',
    'assistant',
    '\n',
    'hello',
    '<|im_end|>',
  ];
  return {
    step,
    index,
    rowId: `row-${index}`,
    group: index >> 1,
    sample: index & 1,
    prompt: 'hi',
    turns: [
      { index: 0, role: 'user', text: 'hi', tokenStart: 0, tokenEnd: 6 },
      {
        index: 1,
        role: 'assistant',
        text: 'hello',
        tokenStart: 6,
        tokenEnd: 11,
        finish: 'eos',
        logprob: { mean: -0.5, min: -1 },
      },
    ],
    finishReason: 'answered',
    rewards: { outcome: 1, process: 0, total: 1, components: { exact_match: 1 } },
    advantage: 0.5,
    lengths: { prompt: 9, response: 2, total: 11 },
    tokens: {
      ids: encodeInt32(pieces.map((_, i) => 100 + i)),
      pieces,
      mask: encodeUint8(pieces.map((_, i) => (i >= 9 ? 1 : 0))),
      logprobs: encodeFloat32(pieces.map((_, i) => (i >= 9 ? -0.25 * i : 0))),
    },
  };
}

describe('run store', () => {
  it('writes and reads back run.json, metrics and rollouts', () => {
    const dir = path.join(tmpDir(), 'run-a');
    const writer = RunStoreWriter.create(dir, runRecord('run-a'));
    writer.appendMetrics({
      step: 1,
      time: new Date().toISOString(),
      kind: 'train',
      values: { 'reward/mean': 0.5, 'loss/total': null },
      nonFinite: ['loss/total'],
    });
    writer.appendTrajectories(1, [trajectory(1, 0), trajectory(1, 1)]);
    writer.completeStep(1);
    writer.finish('finished');
    const reader = new RunStoreReader(dir);
    assert.equal(reader.run().status, 'finished');
    assert.equal(reader.run().lastStep, 1);
    assert.deepEqual(reader.steps(), [1]);
    const { records } = reader.trajectories(1);
    assert.equal(records.length, 2);
    assert.deepEqual(Array.from(decodeInt32(records[1].tokens.ids)).slice(0, 3), [100, 101, 102]);
    assert.deepEqual(Array.from(decodeUint8(records[1].tokens.mask)).slice(8), [0, 1, 1]);
    assert.equal(decodeFloat32(records[1].tokens.logprobs)[10], -2.5);
    assert.deepEqual(reader.metrics().records[0].nonFinite, ['loss/total']);
  });

  it("keeps each evaluation's trajectories apart from the training steps; a repeated evaluation replaces its file", () => {
    const dir = tmpDir();
    const writer = RunStoreWriter.create(dir, runRecord('run-e'));
    writer.appendTrajectories(1, [trajectory(1, 0)]);
    writer.writeEvaluation(0, [trajectory(0, 0), trajectory(0, 1), trajectory(0, 2)]);
    writer.writeEvaluation(1, [trajectory(1, 0), trajectory(1, 1)]);
    writer.writeEvaluation(1, [trajectory(1, 0)]);
    const reader = new RunStoreReader(dir);
    assert.deepEqual(reader.steps(), [1]);
    assert.deepEqual(reader.evaluations(), [0, 1]);
    assert.deepEqual(
      reader.evaluationTrajectories(0).records.map((t) => t.index),
      [0, 1, 2],
    );
    assert.deepEqual(
      reader.evaluationTrajectories(1).records.map((t) => t.index),
      [0],
    );
    assert.ok(fs.existsSync(path.join(dir, 'evals', 'step-000000.jsonl')));
    assert.throws(
      () => writer.writeEvaluation(2, [{ ...trajectory(2, 0), finishReason: 'bored' as never }]),
      /evaluation trajectory 0 of step 2: finishReason/,
    );
    assert.deepEqual(reader.evaluations(), [0, 1], 'nothing written for a record that does not validate');
  });

  it('keeps recorded tool calls in cassette.jsonl, validated, and a resume cuts them back with the rest', () => {
    const dir = path.join(tmpDir(), 'run-c');
    const writer = RunStoreWriter.create(dir, runRecord('run-c'));
    const entry = (set: 'train' | 'eval', step: number) => ({
      set,
      step,
      trajectory: 0,
      turn: 0,
      call: 0,
      tool: 'search',
      arguments: { query: `q${step}` },
      result: { content: [{ type: 'text' as const, text: 'r' }] },
      latencyMs: 1,
      logs: [],
    });
    writer.appendCassette([entry('eval', 0), entry('train', 1), entry('train', 2)]);
    writer.appendCassette([entry('eval', 2), entry('train', 3)]);
    assert.throws(
      () => writer.appendCassette([{ ...entry('train', 4), tool: '' }]),
      /recorded {2}call of train step 4, trajectory 0: tool: /,
    );
    writer.close();
    const reader = new RunStoreReader(dir);
    assert.deepEqual(
      reader.cassette().records.map((e) => `${e.set}${e.step}`),
      ['eval0', 'train1', 'train2', 'eval2', 'train3'],
    );
    // Resuming from step 2's checkpoint: step 3 and the evaluation after step 2 are recorded again.
    dropRecordsAfterStep(dir, 2);
    assert.deepEqual(
      reader.cassette().records.map((e) => `${e.set}${e.step}`),
      ['eval0', 'train1', 'train2'],
    );
    assert.deepEqual(
      new RunStoreReader(path.join(tmpDir(), 'none')).cassette().records,
      [],
      'a run without a cassette has no recorded calls',
    );
  });

  it('drops a torn last line (a crash mid-write) and reports it', () => {
    const dir = path.join(tmpDir(), 'run-b');
    const writer = RunStoreWriter.create(dir, runRecord('run-b'));
    writer.appendMetrics({ step: 1, time: 't', kind: 'train', values: { lr: 1e-5 } });
    fs.appendFileSync(path.join(dir, 'metrics.jsonl'), '{"step":2,"time":"t","ki');
    const { records, tornLastLine } = new RunStoreReader(dir).metrics();
    assert.equal(records.length, 1);
    assert.equal(tornLastLine, true);
  });

  it('names the file and line of a record that does not validate', () => {
    const dir = path.join(tmpDir(), 'run-c');
    RunStoreWriter.create(dir, runRecord('run-c'));
    fs.writeFileSync(
      path.join(dir, 'metrics.jsonl'),
      '{"step":1,"time":"t","kind":"train","values":{}}\n{"step":"two","time":"t","kind":"train","values":{}}\n',
    );
    assert.throws(
      () => new RunStoreReader(dir).metrics(),
      /metrics\.jsonl line 2: step: Invalid input: expected number, received string/,
    );
  });

  it('refuses to overwrite an existing run and rejects invalid records before writing', () => {
    const dir = path.join(tmpDir(), 'run-d');
    const writer = RunStoreWriter.create(dir, runRecord('run-d'));
    // While its writer is live, the run is refused naming the writer; once it ended, because it holds a run.
    assert.throws(
      () => RunStoreWriter.create(dir, runRecord('run-d')),
      new RegExp(`being written by another process: pid ${process.pid} on `),
    );
    assert.throws(
      () => writer.appendTrajectories(1, [{ ...trajectory(1, 0), finishReason: 'bored' as never }]),
      /trajectory 0 of step 1: finishReason/,
    );
    assert.deepEqual(new RunStoreReader(dir).steps(), []);
    writer.finish('finished');
    assert.throws(
      () => RunStoreWriter.create(dir, runRecord('run-d')),
      /already holds a run; choose another run directory or resume it/,
    );
  });

  it('lists runs newest first and reports unreadable ones', () => {
    const root = tmpDir();
    RunStoreWriter.create(path.join(root, 'old'), { ...runRecord('old'), createdAt: '2026-01-01T00:00:00Z' });
    RunStoreWriter.create(path.join(root, 'new'), { ...runRecord('new'), createdAt: '2026-06-01T00:00:00Z' });
    fs.mkdirSync(path.join(root, 'broken'));
    fs.writeFileSync(path.join(root, 'broken', 'run.json'), '{"protocol":1}');
    const runs = listRuns(root);
    assert.deepEqual(
      runs.filter((r) => r.run).map((r) => r.run!.id),
      ['new', 'old'],
    );
    assert.match(runs.find((r) => r.error)!.error!, /broken\/run\.json: id: /);
  });
});
