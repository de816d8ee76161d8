/**
 * The breakpoints of a session: function breakpoints on tool names, the exception filters, and
 * line breakpoints in transcripts (one trajectory's turn, call or end — where VS Code's
 * logpoints live, since DAP gives function breakpoints no log message). Each may carry a
 * condition and a hit condition, line breakpoints a log message; all are evaluated over the
 * turn context (see turnContext.ts). Live training and replay must behave alike, so both targets
 * ask the same question at every stop point they reach: `stopAt` — does a breakpoint fire here,
 * and which logpoints print.
 */
import type { DebugProtocol } from '@vscode/debugprotocol';
import { compileExpression, display, type CompiledExpression } from './expression';
import { compileTemplate, type CompiledTemplate } from './logTemplate';
import { describePoint, type StopPoint } from '../timeline';
import type { BreakpointsDuringStep } from '../../../trainer/contract/protocol/debugger';
import type { MetricsRecord, TrajectoryRecord } from '../../../trainer/contract/protocol/runStore';
import {
  CONTEXT_NAMES,
  turnContext,
  type ExceptionFact,
  type ExceptionFilterId,
  type PointFacts,
  type TurnContext,
} from './turnContext';

const CONDITION_HELP = 'an expression over the turn context, e.g. call.name === "search" && turn > 3';

export const EXCEPTION_FILTERS: DebugProtocol.ExceptionBreakpointsFilter[] = [
  {
    filter: 'toolThrew',
    label: 'Tool threw or timed out',
    description: 'Stop at the result of a tool call whose code threw or did not finish in time.',
    default: false,
    supportsCondition: true,
    conditionDescription: CONDITION_HELP,
  },
  {
    filter: 'toolCallParse',
    label: 'Tool-call parse failure',
    description: 'Stop at a tool call the policy wrote that could not be parsed.',
    default: false,
    supportsCondition: true,
    conditionDescription: CONDITION_HELP,
  },
  {
    filter: 'toolCallInvalid',
    label: 'Unknown tool or invalid arguments',
    description: "Stop at a tool call that names no tool, or whose arguments do not match the tool's schema.",
    default: false,
    supportsCondition: true,
    conditionDescription: CONDITION_HELP,
  },
  {
    filter: 'truncated',
    label: 'Truncated by budget',
    description:
      'Stop where a length budget cut the rollout: a turn at its token limit, a truncated tool result, a trajectory out of turns or context.',
    default: false,
    supportsCondition: true,
    conditionDescription: CONDITION_HELP,
  },
  {
    filter: 'nonFiniteLoss',
    label: 'Non-finite loss',
    description: 'Stop after the rollouts of a step whose loss or gradient was not finite (the update was skipped).',
    default: false,
    supportsCondition: true,
    conditionDescription: 'an expression over the step, e.g. step > 10',
  },
];

/** `5` or `>=5`: from the 5th hit on; `==5`: the 5th only; `>5`, `<5`, `<=5`; `%5`: every 5th. */
type HitCondition = (hits: number) => boolean;

export function parseHitCondition(text: string): HitCondition {
  const match = /^\s*(?:(>=|<=|==|>|<|%)\s*)?(\d+)\s*$/.exec(text);
  if (!match)
    throw new Error(`hit count "${text}": expected a number with an optional operator, e.g. 5, >=5, ==5, >5, <5, %5`);
  const n = Number(match[2]);
  switch (match[1] ?? '>=') {
    case '==':
      return (hits) => hits === n;
    case '>':
      return (hits) => hits > n;
    case '<':
      return (hits) => hits < n;
    case '<=':
      return (hits) => hits <= n;
    case '%':
      if (n === 0) throw new Error(`hit count "${text}": %0 would never stop`);
      return (hits) => hits % n === 0;
    default:
      return (hits) => hits >= n;
  }
}

interface Rule {
  id: number;
  condition?: CompiledExpression;
  hitCondition?: HitCondition;
  log?: CompiledTemplate;
  hits: number;
}

interface ToolRule extends Rule {
  tool: string;
}

/** A point of one trajectory that a transcript line stands for. */
export interface LinePoint {
  phase: StopPoint['phase'];
  turn: number;
  call: number;
  /** 0-based transcript line. */
  line: number;
}

interface LineRule extends Rule {
  point: LinePoint;
}

/** Where a check happens, for line breakpoints: which trajectory, at which point. */
export interface CheckLocation {
  step: number;
  /** The trajectory's `index` in its step. */
  index: number;
  point: StopPoint;
}

export interface Stop {
  reason: 'breakpoint' | 'function breakpoint' | 'exception';
  description: string;
  hitBreakpointIds: number[];
  exception?: ExceptionFact;
}

export interface CheckResult {
  stop?: Stop;
  /** Logpoint messages to print, in order. */
  logs: string[];
  /** Conditions that failed to evaluate here (printed once each; they count as false). */
  errors: string[];
}

/** A stop point as a target reaches it: the step, its trajectories as they stand, the point, and what is known there. */
export interface ReachedPoint {
  step: number;
  trajectories: readonly TrajectoryRecord[];
  point: StopPoint;
  metrics?: MetricsRecord | undefined;
  /** The exceptions and facts at the point (live mode also counts the call's own failure at its result). */
  facts: (trajectory: TrajectoryRecord | undefined) => PointFacts;
}

/** A breakpoint fired: the stop to report, focused on the point's trajectory. */
export interface BreakpointStop extends Stop {
  trajectory: number;
}

/** A step in progress: the trajectory stepped (its position in the step's list). */
export interface SteppingTrajectory {
  trajectory: number;
}

/** How many passed-over hits the summary after a step lists by name. */
const PASSED_OVER_LISTED = 5;

export class BreakpointSet {
  private tools: ToolRule[] = [];
  /** Conditions that failed to evaluate, reported once each. */
  private readonly reportedErrors = new Set<string>();
  private filters = new Map<ExceptionFilterId, Rule>();
  /** Line breakpoints in transcripts, by `step:index` of their trajectory. */
  private lines = new Map<string, LineRule[]>();
  private nextId = 1;
  /** Breakpoints of other trajectories that fired during the step in progress and did not stop it. */
  private passedOver: string[] = [];
  private passedOverTrajectory: number | undefined;

  /**
   * Which breakpoints may interrupt a step (launch attribute `breakpointsDuringStep`):
   * `stepped-trajectory` — only the stepped trajectory's; the other trajectories of the batch
   * move along meanwhile and their hits are listed in the debug console when the step ends
   * (with a breakpoint on a tool every trajectory calls, a step would otherwise rarely reach
   * its own next turn). `all` — any breakpoint, as a thread debugger stops on another thread's
   * breakpoint during a step; the stop then focuses that trajectory and the step is over.
   */
  duringStep: BreakpointsDuringStep = 'stepped-trajectory';

  /** Replace the function breakpoints; each answer says whether it was accepted and why not. */
  setFunctionBreakpoints(breakpoints: readonly DebugProtocol.FunctionBreakpoint[]): DebugProtocol.Breakpoint[] {
    this.tools = [];
    return breakpoints.map((bp) => {
      const id = this.nextId++;
      const tool = bp.name.trim();
      if (!/^[^\s()]+$/.test(tool))
        return {
          id,
          verified: false,
          message: `"${bp.name}" is not a tool name: a function breakpoint names the tool to stop before, e.g. search`,
        };
      try {
        this.tools.push({ id, tool, hits: 0, ...compileRule(bp) });
        return { id, verified: true };
      } catch (error) {
        return { id, verified: false, message: (error as Error).message };
      }
    });
  }

  setExceptionBreakpoints(args: DebugProtocol.SetExceptionBreakpointsArguments): DebugProtocol.Breakpoint[] {
    this.filters.clear();
    const known = new Set(EXCEPTION_FILTERS.map((f) => f.filter));
    const requested: Array<{ filterId: string; condition?: string }> = [
      ...args.filters.map((filterId) => ({ filterId })),
      ...(args.filterOptions ?? []),
    ];
    return requested.map(({ filterId, condition }) => {
      const id = this.nextId++;
      if (!known.has(filterId))
        return {
          id,
          verified: false,
          message: `unknown exception filter "${filterId}"; known: ${[...known].join(', ')}`,
        };
      try {
        this.filters.set(filterId as ExceptionFilterId, { id, hits: 0, ...compileRule({ condition }) });
        return { id, verified: true };
      } catch (error) {
        return { id, verified: false, message: (error as Error).message };
      }
    });
  }

  /**
   * Replace the line breakpoints of one trajectory's transcript. Each line stands for the
   * point it belongs to (the turn, call, result or end above it); the answer moves the
   * breakpoint to that point's line.
   */
  setLineBreakpoints(
    step: number,
    index: number,
    breakpoints: readonly DebugProtocol.SourceBreakpoint[],
    points: readonly LinePoint[],
  ): DebugProtocol.Breakpoint[] {
    const rules: LineRule[] = [];
    const answers = breakpoints.map((bp) => {
      const id = this.nextId++;
      const point = [...points].reverse().find((p) => p.line <= bp.line) ?? points[0];
      if (!point)
        return { id, verified: false, line: bp.line, message: `step ${step} has no trajectory #${index} in this run` };
      try {
        rules.push({ id, point, hits: 0, ...compileRule(bp) });
        return { id, verified: true, line: point.line };
      } catch (error) {
        return { id, verified: false, line: bp.line, message: (error as Error).message };
      }
    });
    if (rules.length) this.lines.set(`${step}:${index}`, rules);
    else this.lines.delete(`${step}:${index}`);
    return answers;
  }

  get isEmpty(): boolean {
    return this.tools.length === 0 && this.filters.size === 0 && this.lines.size === 0;
  }

  /** What is set, by kind: live training asks the trainer to hold only where one of them can fire. */
  summary(): { tools: boolean; filters: ExceptionFilterId[]; lines: boolean } {
    return { tools: this.tools.length > 0, filters: [...this.filters.keys()], lines: this.lines.size > 0 };
  }

  /**
   * Does a breakpoint stop the rollout at this point? Logpoints print through `output`, and a
   * condition that cannot be evaluated is reported once (it counts as false). `stepping`: a step
   * of that trajectory is in progress, and `duringStep` says whether another trajectory's
   * breakpoint may interrupt it; one that may not is remembered for takePassedOver.
   */
  stopAt(
    reached: ReachedPoint,
    output: (text: string, category: 'console' | 'stderr') => void,
    stepping?: SteppingTrajectory,
  ): BreakpointStop | undefined {
    if (this.isEmpty) return undefined;
    const { step, point, metrics } = reached;
    const trajectory = point.trajectory >= 0 ? reached.trajectories[point.trajectory] : undefined;
    const location = trajectory ? { step, index: trajectory.index, point } : undefined;
    const result = this.check(reached.facts(trajectory), () => turnContext(step, trajectory, point, metrics), location);
    for (const log of result.logs) output(log, 'console');
    for (const error of result.errors) {
      if (this.reportedErrors.has(error)) continue;
      this.reportedErrors.add(error);
      output(`${error} (treated as false)`, 'stderr');
    }
    if (!result.stop) return undefined;
    if (stepping && point.trajectory !== stepping.trajectory && this.duringStep === 'stepped-trajectory') {
      // Another trajectory's breakpoint during a step: it counted as a hit, it does not stop the step.
      this.passedOverTrajectory = reached.trajectories[stepping.trajectory]?.index ?? stepping.trajectory;
      this.passedOver.push(
        `${trajectory ? `step ${step} #${trajectory.index}` : `step ${step}`}: ${result.stop.description}`,
      );
      return undefined;
    }
    return { ...result.stop, trajectory: Math.max(0, point.trajectory) };
  }

  /**
   * What the step that just ended went past: one line for the debug console naming the
   * breakpoint hits of other trajectories that did not stop it, or undefined when there were
   * none. Clears the list, so each step reports its own.
   */
  takePassedOver(): string | undefined {
    const passed = this.passedOver;
    const stepped = this.passedOverTrajectory;
    this.passedOver = [];
    this.passedOverTrajectory = undefined;
    if (passed.length === 0) return undefined;
    const listed = passed.slice(0, PASSED_OVER_LISTED).join('; ');
    const more = passed.length > PASSED_OVER_LISTED ? `; and ${passed.length - PASSED_OVER_LISTED} more` : '';
    return (
      `While stepping #${stepped}, ${passed.length} breakpoint hit${passed.length === 1 ? '' : 's'} in other trajectories did not stop: ${listed}${more}. ` +
      'Only the stepped trajectory\'s breakpoints interrupt a step; "breakpointsDuringStep": "all" in the launch configuration (or the setting rolloutStudio.debugger.breakpointsDuringStep) stops at any.'
    );
  }

  /**
   * Evaluate every breakpoint that applies at a point. `context` is built only when a
   * breakpoint applies, since most points match none.
   */
  check(facts: PointFacts, context: () => TurnContext, location?: CheckLocation): CheckResult {
    const result: CheckResult = { logs: [], errors: [] };
    let built: TurnContext | undefined;
    const ctx = () => (built ??= context());
    const hitIds: number[] = [];
    const lineIds: number[] = [];
    let exception: ExceptionFact | undefined;
    if (location) {
      const { point } = location;
      for (const rule of this.lines.get(`${location.step}:${location.index}`) ?? []) {
        const p = rule.point;
        if (p.phase === point.phase && p.turn === point.turn && p.call === point.call && this.fires(rule, ctx, result))
          lineIds.push(rule.id);
      }
    }
    if (facts.toolName !== undefined) {
      for (const rule of this.tools)
        if (rule.tool === facts.toolName && this.fires(rule, ctx, result)) hitIds.push(rule.id);
    }
    for (const fact of facts.exceptions) {
      const rule = this.filters.get(fact.filter);
      if (rule && !exception && this.fires(rule, ctx, result)) exception = fact;
    }
    if (exception) {
      result.stop = { reason: 'exception', description: exception.description, hitBreakpointIds: [], exception };
    } else if (hitIds.length) {
      const c = ctx();
      result.stop = {
        reason: 'function breakpoint',
        description: `Paused before ${facts.toolName}(${display(c.call && (c.call as Record<string, unknown>).arguments)})`,
        hitBreakpointIds: hitIds,
      };
    } else if (lineIds.length) {
      result.stop = {
        reason: 'breakpoint',
        description: `Paused at a breakpoint: ${describePoint(location!.point)} of #${location!.index}`,
        hitBreakpointIds: lineIds,
      };
    }
    return result;
  }

  /** Condition true, then the hit counted, then the hit condition; a logpoint logs instead of stopping. */
  private fires(rule: Rule, ctx: () => TurnContext, result: CheckResult): boolean {
    if (rule.condition) {
      let value: unknown;
      try {
        value = rule.condition.evaluate(ctx());
      } catch (error) {
        result.errors.push(`condition "${rule.condition.source}": ${(error as Error).message}`);
        return false;
      }
      if (!value) return false;
    }
    rule.hits++;
    if (rule.hitCondition && !rule.hitCondition(rule.hits)) return false;
    if (rule.log) {
      result.logs.push(rule.log.render(ctx()));
      return false;
    }
    return true;
  }
}

function compileRule(bp: {
  condition?: string | undefined;
  hitCondition?: string | undefined;
  logMessage?: string | undefined;
}): Omit<Rule, 'id' | 'hits'> {
  const rule: Omit<Rule, 'id' | 'hits'> = {};
  if (bp.condition?.trim()) {
    try {
      rule.condition = compileExpression(bp.condition, CONTEXT_NAMES);
    } catch (error) {
      throw new Error(`condition "${bp.condition}": ${(error as Error).message}`, { cause: error });
    }
  }
  if (bp.hitCondition?.trim()) rule.hitCondition = parseHitCondition(bp.hitCondition);
  if (bp.logMessage?.trim()) rule.log = compileTemplate(bp.logMessage, CONTEXT_NAMES);
  return rule;
}
