import type { TickClock } from "./ticks.ts";

/** Ticks one round handles per schedule at most (fired or skipped); the rest wait for the next round. */
export const MAX_TICKS_PER_ROUND = 100;
/** Missed cron ticks one round counts at most (an interval's are counted in one step); the rest are counted by the next rounds. */
export const MAX_MISSED_PER_ROUND = 10_000;

export interface PlanInput {
  clock: TickClock;
  /** The schedule's stored next tick: the first tick this round considers. */
  from: number;
  /** Redis's clock when the round took the schedule. */
  now: number;
  catchupWindowMs: number;
  overlap: "skip" | "allow";
  /** Whether the task the previous tick fired has ended (or there is none): what overlap "skip" waits for. */
  previousEnded: boolean;
}

/** What a round does with one schedule's due ticks. */
export interface RoundPlan {
  /** The ticks to fire, in order: each gets its own task. */
  fire: number[];
  skipped: number;
  missed: number;
  /** The schedule's next tick after this round (still ≤ now when the round stopped at a limit). */
  next: number | undefined;
}

/**
 * Plans a round: the ticks from `from` up to `now`, in order. The catch-up rule: a tick more than
 * `catchupWindowMs` before now (no worker was running) is missed, not fired; later ones fire, at most
 * MAX_TICKS_PER_ROUND. The overlap rule ("skip"): a tick is skipped while the task fired by the
 * previous tick has not ended, and a task fired in this round has not, so "skip" fires at most one.
 */
export function planRound({ clock, from, now, catchupWindowMs, overlap, previousEnded }: PlanInput): RoundPlan {
  const lost = clock.countBefore(from, now - catchupWindowMs, MAX_MISSED_PER_ROUND);
  const plan: RoundPlan = { fire: [], skipped: 0, missed: lost.count, next: lost.next };
  if (lost.next !== undefined && lost.next < now - catchupWindowMs) return plan;
  let ended = previousEnded;
  let tick = lost.next;
  while (tick !== undefined && tick <= now && plan.fire.length + plan.skipped < MAX_TICKS_PER_ROUND) {
    if (overlap === "skip" && !ended) {
      plan.skipped++;
    } else {
      plan.fire.push(tick);
      ended = false;
    }
    tick = clock.after(tick);
  }
  plan.next = tick;
  return plan;
}
