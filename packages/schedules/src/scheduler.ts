import { CorruptRecordError, ErrorCodes, LifecycleError, type LogFields, type Logger, SAFE_ID, sleep } from "@flotilla/core";
import { type FireContext, type FireOutcome, fireSchedule } from "./fire.ts";
import { type ResolvedSchedulerOptions, type SchedulerOptions, schedulerOptions } from "./options.ts";
import { readRecords, type ScheduleRecord } from "./record.ts";
import { scripts } from "./scripts.ts";

/** Schedules one round takes at most; when there were more, the next round starts at once. */
export const SCHEDULES_PER_ROUND = 100;

/** What one round did, and when the next is wanted (ms from its end). */
interface Round {
  fired: number;
  waitMs: number;
}

/**
 * Fires the fleet's schedules from inside any long-lived process (a worker): every process may run
 * one, none is special. A round takes the due schedules under a lease (atomically, so two processes
 * never take the same schedule at once), creates the due ticks' tasks with fixed ids (so a tick
 * fired twice, by a process that took over a dead one's lease, has one task), and records each
 * schedule's progress with a compare-and-set. Errors are logged and retried by the next round:
 * a scheduler never throws out of its loop.
 */
export class Scheduler {
  private readonly options: ResolvedSchedulerOptions;
  private readonly ctx: FireContext;
  private abort: AbortController | undefined;
  private loop: Promise<void> | undefined;

  constructor(options: SchedulerOptions) {
    this.options = schedulerOptions(options);
    const { redis, keys, tasks, workerId } = this.options;
    this.ctx = { redis, keys, tasks, workerId, logger: safe(this.options.logger) };
  }

  /** Starts the rounds: one now, then one whenever a tick falls due (at least every `pollMs`). */
  start(): void {
    if (this.loop) throw new LifecycleError(ErrorCodes.ALREADY_STARTED, `scheduler ${this.options.workerId} is already started`);
    const abort = new AbortController();
    this.abort = abort;
    this.loop = this.run(abort.signal);
  }

  /** Stops the rounds, waiting for one in flight to be recorded. Stopping a stopped scheduler does nothing. */
  async stop(): Promise<void> {
    this.abort?.abort();
    await this.loop;
    this.abort = undefined;
    this.loop = undefined;
  }

  /** Runs one round now; returns the ticks it fired (and recorded). Errors of single schedules are logged, not thrown. */
  async fireDue(): Promise<number> {
    return (await this.round()).fired;
  }

  private async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      let waitMs = this.options.pollMs;
      try {
        waitMs = (await this.round()).waitMs;
      } catch (err) {
        this.ctx.logger.error("schedule round failed: retrying", { err, retryInMs: waitMs });
      }
      await sleep(waitMs, signal).catch(() => undefined);
    }
  }

  private async round(): Promise<Round> {
    const { redis, keys, leaseMs, pollMs } = this.options;
    const [now, earliest, ...taken] = (await scripts.takeDue.run(redis, [keys.schedulesDue()], ["", leaseMs, SCHEDULES_PER_ROUND])) as [
      number,
      string,
      ...string[],
    ];
    const tookAt = performance.now();
    let fired = 0;
    // The soonest anything is due again: what is left in the due set, and where this round put the schedules it took.
    let nextDueAt = taken.length === SCHEDULES_PER_ROUND ? now : earliest === "" ? Number.POSITIVE_INFINITY : Number(earliest);
    const ids = await this.validIds(taken);
    const records = await readRecords(redis, keys, ids);
    for (const [i, id] of ids.entries()) {
      try {
        const { fired: n, next } = await this.fireOne(id, records[i], now);
        fired += n;
        if (next !== undefined) nextDueAt = Math.min(nextDueAt, next);
      } catch (err) {
        // Left as it is: its lease lapses and a later round tries again, logging again.
        const unreadable = err instanceof CorruptRecordError;
        this.ctx.logger.error(unreadable ? "schedule cannot be read: left as it is" : "schedule failed to fire: retrying after its lease", {
          schedule: id,
          err,
        });
      }
    }
    const waitMs = Math.min(pollMs, Math.max(0, nextDueAt - now - (performance.now() - tookAt)));
    return { fired, waitMs };
  }

  /** The ids that can name a schedule; others (written into the due set by something else) are removed from it. */
  private async validIds(ids: readonly string[]): Promise<string[]> {
    const invalid = ids.filter((id) => !SAFE_ID.test(id));
    if (invalid.length > 0) {
      await this.options.redis.zrem(this.options.keys.schedulesDue(), ...invalid);
      this.ctx.logger.warn("ids that cannot name a schedule were removed from the due set", { ids: invalid });
    }
    return ids.filter((id) => SAFE_ID.test(id));
  }

  private async fireOne(id: string, record: ScheduleRecord | undefined | Error, now: number): Promise<FireOutcome> {
    if (record instanceof Error) throw record;
    if (!record) {
      const { redis, keys } = this.options;
      await scripts.forgetOrphan.run(redis, [keys.schedule(id), keys.schedulesDue()], [id]);
      this.ctx.logger.warn("a due schedule had no hash: its id was removed from the due set", { schedule: id });
      return { fired: 0, next: undefined };
    }
    return fireSchedule(this.ctx, record, now);
  }
}

/** A logger whose failures are swallowed: a scheduler's loop must outlive a broken log sink. */
function safe(logger: Logger): Logger {
  const guard =
    (level: keyof Logger) =>
    (msg: string, fields?: LogFields): void => {
      try {
        logger[level](msg, fields);
      } catch {
        // Nothing to report it to.
      }
    };
  return { debug: guard("debug"), info: guard("info"), warn: guard("warn"), error: guard("error") };
}
