/**
 * When the trainer should hold at stop points, and at which kinds. Holding costs a round trip
 * and a snapshot per point, so a training with nothing to stop for runs at full speed
 * (`hold: false`): no breakpoint, no exception filter, no step, no pause and no stop on entry
 * pending. Otherwise the trainer holds only at the kinds of point where something can fire —
 * a function breakpoint only before calls — and BreakpointSet.check decides at each.
 */
import type { ControlMessage, LivePoint } from '../../../trainer/contract/protocol';
import type { ExceptionFilterId } from '../breakpoints/turnContext';

type PointKind = LivePoint['kind'];

export interface HoldNeeds {
  /** Run without debugging: never hold. */
  noDebug: boolean;
  /** A step, a pause or a stop on entry is pending: hold everywhere. */
  moving: boolean;
  breakpoints: { tools: boolean; filters: readonly ExceptionFilterId[]; lines: boolean };
}

/** Where each exception filter can fire live (see liveView.ts: failures found by running show at the result). */
const FILTER_KINDS: Record<ExceptionFilterId, readonly PointKind[]> = {
  toolThrew: ['result'],
  toolCallParse: ['result'],
  toolCallInvalid: ['result'],
  truncated: ['turn', 'result', 'end'],
  nonFiniteLoss: ['update'],
};

export type HoldConfiguration = Pick<Extract<ControlMessage, { type: 'debug.configure' }>, 'hold' | 'points'>;

export function holdConfiguration(needs: HoldNeeds): HoldConfiguration {
  if (needs.noDebug) return { hold: false };
  // Line breakpoints (transcript lines) can stand for any point.
  if (needs.moving || needs.breakpoints.lines) return { hold: true };
  const kinds = new Set<PointKind>();
  if (needs.breakpoints.tools) kinds.add('call');
  for (const filter of needs.breakpoints.filters) for (const kind of FILTER_KINDS[filter]) kinds.add(kind);
  if (kinds.size === 0) return { hold: false };
  const order: PointKind[] = ['turn', 'call', 'result', 'end', 'update'];
  return { hold: true, points: order.filter((k) => kinds.has(k)) };
}
