import * as crypto from 'node:crypto';
import * as path from 'node:path';
import {
  ConfigError,
  hashable,
  isDefinedConfig,
  parseConfig,
  type LoadedConfig,
} from '../../pipeline/training/config/trainingConfig';
import { compileUserModule, evaluateUserModule } from './loadUserModule';
import { isolateTools } from './toolHost';
import { isolateRewards } from './rewardHost';
import { CommandAgentRunner, ModuleAgentRunner } from './agentProcess';

/** Load and validate a config file (TypeScript, compiled with esbuild; its default export). */
export async function loadConfig(file: string): Promise<LoadedConfig> {
  const absolute = path.resolve(file);
  const code = await compileUserModule(absolute);
  const exports = evaluateUserModule(absolute, code);
  const value = exports['default'] ?? exports['config'];
  if (value === undefined)
    throw new ConfigError(`${absolute}: export the config as the default export (export default defineConfig({ … }))`);
  if (!isDefinedConfig(value)) {
    const what = typeof value === 'object' && value !== null ? 'a plain object' : `a ${typeof value}`;
    throw new ConfigError(
      `${absolute}: the default export is ${what}, not a config made by defineConfig; write: import { defineConfig } from 'rollout-studio'; export default defineConfig({ … }) — it checks the config's types as you write it`,
    );
  }
  const config = parseConfig(value, absolute);
  const dir = path.dirname(absolute);
  const hash = crypto
    .createHash('sha256')
    .update(JSON.stringify(hashable(config)))
    .digest('hex')
    .slice(0, 16);
  // The tools run in a worker that evaluates this same code, where a call that never yields can be stopped.
  return {
    config,
    file: absolute,
    resolve: (p) => path.resolve(dir, p),
    hash,
    placeTools: (tools) => isolateTools(absolute, code, tools),
    // The rewards too: a reward that never returns is stopped at its deadline, and signals still reach the trainer.
    placeRewards: (rewards) => isolateRewards(absolute, code, rewards),
    // A module agent runs in a host process of its own, a command agent as a process per session.
    placeAgent: (agent, log) =>
      typeof agent === 'string' || 'module' in agent
        ? new ModuleAgentRunner(
            path.resolve(dir, typeof agent === 'string' ? agent : agent.module),
            typeof agent === 'string' ? undefined : agent.export,
            log,
          )
        : new CommandAgentRunner(
            { command: agent.command, cwd: path.resolve(dir, agent.cwd ?? '.'), env: agent.env },
            log,
          ),
  };
}
