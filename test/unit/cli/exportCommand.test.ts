/** `rollout-studio export <target>`: the target picks the command, which then checks its own arguments. */
import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { exportCommand, exportUsage } from '#trainer/bridges/cli/commands/exportCommand';

const message = (argv: string[]) =>
  exportCommand(argv).then(
    () => 'ok',
    (e: Error) => e.message,
  );

describe('export command', () => {
  it('sends each target to its own command', async () => {
    assert.match(await message(['gguf', 'some-model']), /export gguf: --out FILE is required/);
    assert.match(await message(['verl']), /expected exactly one config file/);
    assert.match(await message(['verl', 'config.ts']), /--out DIR is required/);
  });

  it('names the targets when the first argument is none of them', async () => {
    assert.match(await message([]), /name the format first \(gguf, verl\)/);
    assert.match(await message(['--out', 'x.gguf', 'gguf']), /name the format first \(gguf, verl\)/);
    assert.match(await message(['onnx']), /unknown format "onnx"; supported: gguf, verl/);
    assert.match(await message(['toString']), /unknown format "toString"/);
  });

  it('its usage lists both targets, the overview line first', () => {
    const [first] = exportUsage.split('\n');
    assert.match(first, /export gguf .* \| export verl /);
    assert.match(
      exportUsage,
      /rollout-studio export gguf <run\|checkpoint\|model> --out FILE \[--type f32\|f16\|q8_0\|q4_0\]/,
    );
    assert.match(exportUsage, /rollout-studio export verl <config\.ts> --out DIR/);
  });
});
