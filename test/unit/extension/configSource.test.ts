import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { isTrainingConfigSource } from '../../../extension/live/configSource';

describe('which files are training configs', () => {
  const ours = "import { defineConfig } from 'rollout-studio';\nexport default defineConfig({ steps: 3 });\n";
  it('takes a TypeScript file that imports rollout-studio and exports defineConfig, or is named *.config.ts', () => {
    assert.equal(isTrainingConfigSource('/w/agent.ts', ours), true);
    assert.equal(
      isTrainingConfigSource(
        '/w/agent.config.ts',
        'import { z } from "rollout-studio";\nconst c = {};\nexport default c;',
      ),
      true,
    );
    assert.equal(isTrainingConfigSource('/w/agent.config.mts', ours), true);
  });

  it('leaves other tools’ configs and other files alone', () => {
    assert.equal(
      isTrainingConfigSource(
        '/w/vite.config.ts',
        "import { defineConfig } from 'vite';\nexport default defineConfig({});",
      ),
      false,
    );
    assert.equal(
      isTrainingConfigSource('/w/tools.ts', "import { SearchTool } from 'rollout-studio';\nexport const tools = [];"),
      false,
    );
    assert.equal(isTrainingConfigSource('/w/agent.config.js', ours), false);
  });
});
