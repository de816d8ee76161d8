import type { ChatTemplate } from '../../../foundations/models/text/chatTemplate';
import type { Policy, SamplingOptions } from '../../../foundations/models/generation/policy';
import type { RolloutObserver } from '../../rollout/observer';
import { functionAgent, type AgentRunner } from '../../rollout/gateway/agentRunner';
import { GatewayRollout, type GatewayRolloutOptions } from '../../rollout/gateway/gatewayRollout';
import type { RolloutImages } from '../../rollout/images';
import {
  agentFunction,
  agentTimeoutMs,
  ConfigError,
  type LoadedConfig,
  type ModuleOrCommandAgent,
} from '../config/trainingConfig';
import { definedFields } from '../../../contract/definedFields';

/**
 * The config's `agent` as rollouts (rollout/gateway): where it runs — a function here, a module
 * or a command where the config's loader places it — and the gateway over the policy that serves
 * its sessions, with the config's budget, template variables, stop strings and constraints. The
 * training run, its evaluations and `rollout-studio eval` all roll an agent out through this.
 */

/** The config's agent, placed where the loader runs it (a function agent runs here). */
export function agentRunner(loaded: LoadedConfig, log: (line: string) => void): AgentRunner {
  const agent = loaded.config.agent!;
  const fn = agentFunction(agent);
  if (fn) return functionAgent(fn);
  if (!loaded.placeAgent)
    throw new ConfigError(`${loaded.file}: agent: a module or command agent needs the config loaded from its file`);
  return loaded.placeAgent(agent as ModuleOrCommandAgent, log);
}

export function agentRollouts(
  loaded: LoadedConfig,
  parts: {
    policy: Policy;
    template: ChatTemplate;
    agent: AgentRunner;
    sampling: SamplingOptions;
    /** Images in the agent's requests (the model's vision tower and processor). */
    images: RolloutImages;
    observer?: RolloutObserver;
    /** Re-rolls: what each session replays from the recorded run (rerollAgent.ts). */
    replay?: GatewayRolloutOptions['replay'];
  },
): GatewayRollout {
  const r = loaded.config.rollout;
  return new GatewayRollout({
    ...parts,
    budget: r.budget,
    ...definedFields({ format: r.format }),
    templateKwargs: r.templateKwargs,
    stop: r.stop,
    constrainCalls: r.constrainToolCalls,
    sessionTimeoutMs: agentTimeoutMs(loaded.config.agent!),
  });
}
