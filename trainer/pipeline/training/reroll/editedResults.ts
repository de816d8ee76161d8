import type { BranchEdit } from '../../../contract/protocol/branches';
import { textResult } from '../../../foundations/tools/result';
import type {
  InterceptedCall,
  InterceptedOutcome,
  ToolCallInterceptor,
  ToolCallRequest,
} from '../../../foundations/tools/runner';

/**
 * A re-roll's edited tool results: the calls of the cut turn whose result the user replaced are
 * answered with that text (no tool runs); every other call goes to `inner` (the run's cassette)
 * or, without one, to its tool.
 */
export class EditedResults implements ToolCallInterceptor {
  private readonly results: Map<number, string>;
  private readonly applied = new Set<number>();

  constructor(
    private readonly turn: number,
    edits: readonly BranchEdit[],
    private readonly inner?: ToolCallInterceptor,
  ) {
    this.results = new Map(edits.flatMap((e) => (e.kind === 'result' ? [[e.call, e.text] as const] : [])));
  }

  answer(request: ToolCallRequest, tool: string, args: unknown): InterceptedOutcome | undefined {
    const text = request.turn === this.turn ? this.results.get(request.callIndex) : undefined;
    if (text !== undefined) {
      this.applied.add(request.callIndex);
      return { result: textResult(text), latencyMs: 0, logs: [] };
    }
    return this.inner?.answer?.(request, tool, args);
  }

  roundFinished(calls: readonly InterceptedCall[]): void {
    this.inner?.roundFinished?.(calls);
  }

  /** An edited result the policy never saw (its call failed before reaching the tool) is an error, not a silent no-op. */
  checkApplied(): void {
    const missed = [...this.results.keys()].filter((call) => !this.applied.has(call));
    if (missed.length) {
      throw new Error(
        `the edited result of call ${missed.join(', ')} of turn ${this.turn} was not used: the call did not reach its tool (its name or arguments fail the tool's schema); edit its arguments too`,
      );
    }
  }
}
