/**
 * The pretraining corpus is general: it holds none of the examples' tools, prompts or questions —
 * task skills come from each task's own SFT and RL. Checked on thousands of generated episodes,
 * decoded.
 */
import { before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ChatTemplate } from '#trainer/foundations/models/text/chatTemplate';
import { Tokenizer } from '#trainer/foundations/models/text/tokenizer';
import { truncateBpeTokenizer } from '#trainer/foundations/models/text/truncateTokenizer';
import { CorpusContext } from '#trainer/bases/recipes/corpus/corpusContext';
import { packStep } from '#trainer/bases/recipes/corpus/mix';
import { BASE_RECIPE } from '#trainer/bases/recipes/recipe';
import { qwen3TokenizerDir } from '#trainer/bases/recipes/tokenizerSource';
import { SYSTEM_PROMPT as MULTIHOP_PROMPT } from '../../../examples/multihop-search/rows';
import { QUESTION_TEMPLATES } from '../../../examples/multihop-search/data';
import { QUESTION_TEMPLATES as DEEP_TEMPLATES, questionText as deepQuestion } from '../../../examples/deep-search/data';
import { SYSTEM_PROMPT as DEEP_PROMPT } from '../../../examples/deep-search/rows';
import { SYSTEM_PROMPT as CALCULATOR_PROMPT } from '../../../examples/calculator/rows';
import { SYSTEM_PROMPT as ZOOM_PROMPT } from '../../../examples/visual-zoom/rows';
import { tools as calculatorTools } from '../../../examples/calculator/tools';
import { tools as multihopTools } from '../../../examples/multihop-search/tools';
import { tools as deepTools } from '../../../examples/deep-search/tools';
import { tools as zoomTools } from '../../../examples/visual-zoom/tools';

let text: string;
let chainText: string;

before(() => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'contamination-'));
  truncateBpeTokenizer(qwen3TokenizerDir(), BASE_RECIPE.tokenizer.merges, dir);
  const tokenizer = Tokenizer.load(dir);
  const context = new CorpusContext(ChatTemplate.fromTokenizer(tokenizer));
  // 80 steps of the base recipe's own rows: about 330,000 tokens.
  const rows = Array.from({ length: 80 }, (_, step) =>
    packStep(
      context,
      BASE_RECIPE.data.mix,
      BASE_RECIPE.data.weights,
      BASE_RECIPE.data.rows,
      BASE_RECIPE.data.length,
      BASE_RECIPE.seed,
      step + 1,
    ),
  ).flat();
  // And chains of facts (fact_chain), which a recipe may add: the nearest thing in the corpus to the search examples.
  const chains = Array.from({ length: 20 }, (_, step) =>
    packStep(context, { fact_chain: 1 }, BASE_RECIPE.data.weights, 8, 1024, BASE_RECIPE.seed, step + 1),
  ).flat();
  chainText = chains.map((r) => tokenizer.decode(r.ids)).join('\n');
  text = [...rows, ...chains].map((r) => tokenizer.decode(r.ids)).join('\n');
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('the pretraining corpus holds no example task', () => {
  it('really is the corpus: tool calls in the chat template, with random tools', () => {
    assert.ok(text.length > 300_000, `${text.length} characters`);
    assert.ok((text.match(/<tool_response>/g) ?? []).length > 300, 'with the chains of facts');
    assert.ok((text.match(/<tool_call>/g) ?? []).length > 200);
    assert.ok((text.match(/"name": "[a-z_]+"/g) ?? []).length > 200);
  });

  it("offers none of the examples' tools", () => {
    for (const tool of [...calculatorTools, ...multihopTools, ...deepTools, ...zoomTools]) {
      assert.doesNotMatch(text, new RegExp(`"name": "${tool.name}"`), `tool ${tool.name}`);
      assert.ok(!text.includes(tool.description), `description of ${tool.name}`);
    }
    // Nothing that searches, computes or converts.
    assert.doesNotMatch(text, /"name": "[a-z_]*(search|calc|comput|convert|exchange|evaluat)[a-z_]*"/);
    assert.doesNotMatch(text, /"(query|expression|from_unit|to_unit)":/);
  });

  it("holds none of the examples' questions or prompts", () => {
    for (const template of QUESTION_TEMPLATES) {
      const question = template.text('PERSON');
      const stem = question.slice(0, question.indexOf('PERSON')).trim();
      if (stem) assert.ok(!text.includes(stem), `question "${question}"`);
    }
    // deep-search's questions nest relations ("the country of the home of …"): none of its relations is a link of a corpus chain
    // (other episodes do state an owner or a city: "The owner of Brai Tolmen is …").
    for (const template of DEEP_TEMPLATES) {
      const question = deepQuestion(template, 'PERSON');
      assert.ok(!text.includes(question.slice(0, question.indexOf('PERSON'))), `question "${question}"`);
      for (const relation of template.relations)
        assert.doesNotMatch(chainText, new RegExp(`[Tt]he ${relation} of [A-Z]`), `relation ${relation}`);
    }
    for (const prompt of [MULTIHOP_PROMPT, DEEP_PROMPT, CALCULATOR_PROMPT, ZOOM_PROMPT])
      assert.ok(!text.includes(prompt.slice(0, 40)), prompt);
  });

  it('has no arithmetic to do', () => {
    assert.doesNotMatch(text, /\d\s*[*×/÷]\s*\d/, 'no products or quotients');
    assert.doesNotMatch(text, /\bWhat is \d+ [-+*/] \d+/);
  });
});
