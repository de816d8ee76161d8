import { z } from 'zod';

/**
 * The thresholds of the per-step health checks (health.ts): when a number the run records is
 * worth a warning. The defaults apply where the config's `health` section leaves one out. They
 * are deliberately loose, so that a warning means something; the failures they were chosen from
 * are in HEALTH.md.
 */
export const HealthSettings = z.strictObject({
  /** Recent training steps the trends compare with (their median), and how many must be there before a trend is judged. */
  window: z.number().int().min(1).default(5),
  minHistory: z.number().int().min(1).default(3),
  /** Share of groups whose rewards were all equal (no learning signal) above which a step warns. */
  zeroSignal: z.number().min(0).max(1).default(0.5),
  /** Entropy (nats per generated token) below which the policy has stopped exploring. */
  entropyFloor: z.number().min(0).default(0.01),
  /** An entropy jump: at least `entropyJump` × the window's median and at least `entropyJumpMin` above it. */
  entropyJump: z.number().min(0).default(2),
  entropyJumpMin: z.number().default(0.05),
  /** Share of trajectories cut off by a length limit above which a step warns. */
  truncated: z.number().min(0).max(1).default(0.25),
  /** Share of tool calls that did not parse or did not match their schema above which a step warns. */
  toolErrors: z.number().min(0).max(1).default(0.25),
  /** Share of tokens whose ratio was clipped above which the updates are too large. */
  clipFraction: z.number().min(0).max(1).default(0.3),
  /** KL to the reference growing fast: above `klGrowth` × the window's median and above `klMin` nats per token. */
  klGrowth: z.number().min(0).default(3),
  klMin: z.number().min(0).default(0.05),
  /**
   * The collapse detector (with an entropy jump): the training score falling by this share of
   * the window's median, or the tool error rate rising by this much (absolute) over it.
   */
  scoreDrop: z.number().default(0.3),
  toolErrorRise: z.number().default(0.3),
  /** Steps in a row that must look so before it is a collapse (fewer: a `collapse_risk` warning). */
  collapseSteps: z.number().int().min(1).default(2),
  /**
   * A held-out evaluation below the best: a warning when it falls by `heldOutDrop` of the best
   * (at least `heldOutMin` absolute, the noise of a 100-row evaluation), a collapse when by
   * `heldOutCollapse` (at least twice `heldOutMin`).
   */
  heldOutDrop: z.number().min(0).default(0.2),
  heldOutCollapse: z.number().min(0).default(0.4),
  heldOutMin: z.number().min(0).default(0.05),
});
export type HealthSettings = z.output<typeof HealthSettings>;

/** What a collapse does (`onCollapse` in the config): only warn, roll back to the best checkpoint and lower the learning rate, or stop the run. */
export const OnCollapse = z.enum(['warn', 'rollback', 'stop']);
export type OnCollapse = z.infer<typeof OnCollapse>;
