import { describe, it, before, after } from 'node:test';
import * as assert from 'node:assert/strict';
import { observationText } from '#trainer/foundations/tools/result';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as v8 from 'node:v8';
import * as vm from 'node:vm';
import { datasetFromRows } from '#trainer/foundations/data/index';
import * as rolloutStudio from '#trainer/index';
import { Tool, ToolRunner, ToolSet, UserCodeError } from '#trainer/foundations/tools/index';
import { loadTools } from '#trainer/bridges/usercode/loadTools';
import { loadUserModule } from '#trainer/bridges/usercode/loadUserModule';

/**
 * A user's workspace: TypeScript tool files that import from 'rollout-studio', from a sibling
 * file and from an npm package. Written under test-output/ inside the repository, so that Node
 * finds node_modules from there as it would in a real workspace.
 */
const ROOT = path.resolve(__dirname, '../../../test-output');

const KB = `export const FACTS: Record<string, string> = {
  ada: 'Ada Brenner works at Northwind Labs.',
};
`;

const TOOLS = `import MiniSearch from 'minisearch';
import { Tool, z, type ToolContext } from 'rollout-studio';
import { FACTS } from './kb';

const Args = z.object({ name: z.string() });

export class FactTool extends Tool<typeof Args> {
  name = 'fact';
  description = 'Look up a fact about a person.';
  parameters = Args;
  private readonly index = new MiniSearch({ fields: ['text'] });

  execute({ name }: z.output<typeof Args>, ctx: ToolContext): string {
    ctx.log.info('looking up ' + name);
    const fact = FACTS[name];
    if (!fact) {
      throw new Error('no fact about ' + name);
    }
    return fact;
  }
}

export const tools = [new FactTool()];
`;

describe('loading user TypeScript (esbuild at load time)', () => {
  let dir: string;
  const write = (name: string, text: string) => {
    fs.writeFileSync(path.join(dir, name), text);
    return path.join(dir, name);
  };

  before(() => {
    fs.mkdirSync(ROOT, { recursive: true });
    dir = fs.mkdtempSync(path.join(ROOT, 'user-tools-'));
    write('kb.ts', KB);
    write('tools.ts', TOOLS);
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it("answers 'rollout-studio' with the trainer's own module, so the user's tools are instances of its Tool", async () => {
    const tools = await loadTools(path.join(dir, 'tools.ts'));
    assert.equal(tools.length, 1);
    assert.ok(tools[0] instanceof Tool);
    assert.equal(tools[0].name, 'fact');
    const set = new ToolSet(tools);
    assert.deepEqual(set.specs()[0].function.parameters, {
      type: 'object',
      properties: { name: { type: 'string' } },
      required: ['name'],
    });
    const reexport = await loadUserModule(write('reexport.ts', "export { Tool, z } from 'rollout-studio';\n"));
    assert.equal(reexport['Tool'], Tool);
    assert.equal(reexport['z'], rolloutStudio.z);
  });

  it("points a tool's stack trace at the user's .ts line, through the runner's error record", async () => {
    const tools = await loadTools(path.join(dir, 'tools.ts'));
    const row = datasetFromRows('x', [{ prompt: 'x' }]).rows[0];
    const [ok, failed] = await new ToolRunner(new ToolSet(tools)).run([
      {
        name: 'fact',
        arguments: { name: 'ada' },
        trajectory: { index: 0, rowId: 'x', group: 0, sample: 0, messages: [], calls: [] },
        turn: 0,
        callIndex: 0,
        row,
      },
      {
        name: 'fact',
        arguments: { name: 'bob' },
        trajectory: { index: 0, rowId: 'x', group: 0, sample: 0, messages: [], calls: [] },
        turn: 0,
        callIndex: 1,
        row,
      },
    ]);
    assert.equal(ok.result && observationText(ok.result), 'Ada Brenner works at Northwind Labs.');
    assert.deepEqual(ok.logs, ['info: looking up ada']);
    assert.equal(failed.error?.kind, 'threw');
    // `throw new Error(...)` is on line 17 of tools.ts, column 13.
    assert.match(failed.error!.message, /^Error: no fact about bob\n\s+at FactTool\.execute \((.*)\)/);
    const frame = /at FactTool\.execute \((.*)\)/.exec(failed.error!.message)![1];
    assert.equal(frame, `${path.join(dir, 'tools.ts')}:17:13`);
  });

  it("keeps the stack at the user's .ts line after garbage collection (as during training: Node keeps a module's source map only while its Module object lives)", async () => {
    const tools = await loadTools(path.join(dir, 'tools.ts'));
    v8.setFlagsFromString('--expose-gc');
    const gc = vm.runInNewContext('gc') as () => void;
    gc();
    await new Promise((resolve) => setTimeout(resolve, 10));
    gc();
    const row = datasetFromRows('x', [{ prompt: 'x' }]).rows[0];
    const [failed] = await new ToolRunner(new ToolSet(tools)).run([
      {
        name: 'fact',
        arguments: { name: 'bob' },
        trajectory: { index: 0, rowId: 'x', group: 0, sample: 0, messages: [], calls: [] },
        turn: 0,
        callIndex: 0,
        row,
      },
    ]);
    const frame = /at FactTool\.execute \((.*)\)/.exec(failed.error!.message)![1];
    assert.equal(frame, `${path.join(dir, 'tools.ts')}:17:13`);
  });

  it('reports a compile error with file, line and column', async () => {
    const file = write(
      'broken.ts',
      "import { Tool } from 'rollout-studio';\n\nconst answer: number = ;\nexport default [];\n",
    );
    await assert.rejects(loadUserModule(file), (error: unknown) => {
      assert.ok(error instanceof UserCodeError);
      assert.match(
        error.message,
        new RegExp(
          `^${escape(file)} does not compile:\\n${escape(file)}:3:24: Unexpected ";"\\n {4}const answer: number = ;$`,
        ),
      );
      return true;
    });
  });

  it('reports a throw while the module loads with the user line', async () => {
    const file = write(
      'throws.ts',
      "const limit = 3;\nif (limit > 2) {\n  throw new RangeError('limit too high: ' + limit);\n}\nexport default [];\n",
    );
    await assert.rejects(loadUserModule(file), (error: unknown) => {
      assert.ok(error instanceof UserCodeError);
      assert.match(
        error.message,
        new RegExp(
          `^${escape(file)}: loading the module threw:\\nRangeError: limit too high: 3\\n\\s+at .*${escape(file)}:3:9`,
        ),
      );
      return true;
    });
  });

  it('says what is wrong with what a file exports', async () => {
    const classOnly = write(
      'classOnly.ts',
      "import { Tool, z } from 'rollout-studio';\nexport class Only extends Tool { name = 'only'; description = 'x'; parameters = z.object({}); execute() { return ''; } }\n",
    );
    await assert.rejects(
      loadTools(classOnly),
      /classOnly\.ts: exports no tools \(it exports the class Only; export instances\); export an array of tools as "tools" or default, or export Tool instances/,
    );
    const mixed = write(
      'mixed.ts',
      "import { Tool, z } from 'rollout-studio';\nclass A extends Tool { name = 'a'; description = 'x'; parameters = z.object({}); execute() { return ''; } }\nexport default [new A(), A, 3];\n",
    );
    await assert.rejects(
      loadTools(mixed),
      /mixed\.ts: the default export\[1\] is the class A \(export an instance: new A\(…\)\), not a Tool/,
    );
    const subpath = write('subpath.ts', "import { Tool } from 'rollout-studio/tools';\nexport default [Tool];\n");
    await assert.rejects(
      loadUserModule(subpath),
      /subpath\.ts: loading the module threw:\nUserCodeError: .*subpath\.ts: import from 'rollout-studio' itself, not from 'rollout-studio\/tools'/,
    );
    await assert.rejects(loadUserModule(path.join(dir, 'missing.ts')), /missing\.ts: file not found/);
  });

  it('compiles afresh on every load, so an edited tool is picked up', async () => {
    const file = write('edited.ts', 'export const version = 1;\n');
    assert.equal((await loadUserModule(file))['version'], 1);
    write('edited.ts', 'export const version = 2;\n');
    assert.equal((await loadUserModule(file))['version'], 2);
  });
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
