import { ValidationError } from "@flotilla/core";
import { Cron } from "croner";

/** When a schedule fires: a cron pattern in a timezone, or a fixed interval (`every`, which wins when both are set). */
export interface Cadence {
  cron?: string | undefined;
  every?: number | undefined;
  timezone: string;
}

/**
 * A schedule's ticks (ms since the epoch). Pure: every time it is given is on Redis's clock, read
 * by the caller, so workers whose own clocks differ agree on which ticks are due.
 */
export interface TickClock {
  /** The first tick strictly after `t`; undefined when there is none (a cron pattern that never matches again). */
  after(t: number): number | undefined;
  /**
   * Counts the ticks from `from` (itself a tick) that fall before `cutoff`, at most `max` of them:
   * `next` is the first tick not counted (undefined when the ticks ran out).
   */
  countBefore(from: number, cutoff: number, max: number): { count: number; next: number | undefined };
}

/**
 * `5-or-6-parts`: the classic 5 fields (minute precision) or 6 with seconds first; croner's 7th
 * (year) field is refused, as the schedule spec promises 5 or 6.
 */
const CRON_MODE = "5-or-6-parts";

function cronOf(pattern: string, timezone: string): Cron {
  return new Cron(pattern, { timezone, paused: true, mode: CRON_MODE });
}

/**
 * The clock of a cadence. An interval's ticks are `anchor + k * every` (k ≥ 1), the anchor being the
 * schedule's creation time, so replacing or resuming the schedule keeps its rhythm.
 */
export function tickClock(cadence: Cadence, anchor: number): TickClock {
  if (cadence.every !== undefined) return intervalClock(cadence.every, anchor);
  if (cadence.cron === undefined) throw ValidationError.of("schedule", "cron", "give a cron pattern or an interval (every)");
  return cronClock(cronOf(cadence.cron, cadence.timezone));
}

function intervalClock(every: number, anchor: number): TickClock {
  return {
    after: (t) => anchor + Math.max(1, Math.floor((t - anchor) / every) + 1) * every,
    // Arithmetic, so a schedule that nobody ran for a year costs nothing to catch up.
    countBefore: (from, cutoff) => {
      const count = from < cutoff ? Math.ceil((cutoff - from) / every) : 0;
      return { count, next: from + count * every };
    },
  };
}

function cronClock(cron: Cron): TickClock {
  const after = (t: number) => cron.nextRun(new Date(t))?.getTime();
  return {
    after,
    // Cron ticks have no closed form: walked one by one, bounded by `max` per call.
    countBefore: (from, cutoff, max) => {
      let count = 0;
      let next: number | undefined = from;
      while (next !== undefined && next < cutoff && count < max) {
        count++;
        next = after(next);
      }
      return { count, next };
    },
  };
}

/** The first tick of a cadence strictly after `t` (see tickClock). */
export function nextTick(cadence: Cadence, anchor: number, t: number): number | undefined {
  return tickClock(cadence, anchor).after(t);
}

/** Why a timezone is not an IANA name this runtime knows, or undefined when it is one. */
export function timezoneProblem(timezone: string): string | undefined {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: timezone });
    return undefined;
  } catch {
    return `unknown timezone "${timezone}": use an IANA name such as "Europe/Paris" or "UTC"`;
  }
}

/** Why a cron pattern cannot be used (it does not parse, or never fires), or undefined when it can. */
export function cronProblem(pattern: string, timezone: string, now: number = Date.now()): string | undefined {
  let cron: Cron;
  try {
    cron = cronOf(pattern, timezone);
  } catch (err) {
    return `invalid cron pattern "${pattern}": ${err instanceof Error ? err.message.replace(/^CronPattern: /, "") : String(err)}`;
  }
  try {
    if (cron.nextRun(new Date(now)) === null) return `cron pattern "${pattern}" never fires`;
  } catch (err) {
    return `cron pattern "${pattern}" cannot be evaluated: ${err instanceof Error ? err.message : String(err)}`;
  }
  return undefined;
}
