import { type Keys, type Logger, parseInput, silentLogger } from "@flotilla/core";
import type { TaskStore } from "@flotilla/store";
import type { Redis } from "ioredis";
import { z } from "zod";

/** The defaults of a schedule's optional fields (see ScheduleSpecSchema). */
export const SCHEDULE_DEFAULTS = {
  timezone: "UTC",
  overlap: "skip",
  catchupWindowMs: 60_000,
  paused: false,
} as const;

/** The defaults of the Scheduler's tuning (see SchedulerOptions). */
export const SCHEDULER_DEFAULTS = {
  pollMs: 1000,
  leaseMs: 5000,
} as const;

export interface SchedulerOptions {
  /** The connection schedules and tasks are read and written on. Required. */
  redis: Redis;
  /** The keys of the fleet's prefix. Required. */
  keys: Keys;
  /** Creates the tasks the schedules fire. Required. */
  tasks: TaskStore;
  /** This process's name, recorded on the tasks it fires (`metadata.firedBy`) and on the schedule (`lastFiredBy`). Required. */
  workerId: string;
  /** Where failed rounds and unreadable schedules are reported. @default silent */
  logger?: Logger | undefined;
  /**
   * The longest the scheduler sleeps between rounds; it wakes sooner when a tick falls due sooner.
   * A schedule created by another process is seen within this. @default 1000
   */
  pollMs?: number | undefined;
  /**
   * How long a round holds the schedules it took: no other worker takes them meanwhile. When the
   * process dies mid-round, another worker fires the same ticks this long after (their tasks have
   * fixed ids, so each is created once). Longer than a round takes. @default 5000
   */
  leaseMs?: number | undefined;
}

export type ResolvedSchedulerOptions = Required<Omit<SchedulerOptions, "logger">> & { logger: Logger };

const TuningSchema = z.object({
  workerId: z.string().min(1).max(256),
  pollMs: z.number().int().min(10).max(3_600_000).default(SCHEDULER_DEFAULTS.pollMs),
  leaseMs: z.number().int().min(100).max(3_600_000).default(SCHEDULER_DEFAULTS.leaseMs),
});

/** The scheduler's options with every default applied; a bad value is a ValidationError naming it. */
export function schedulerOptions(options: SchedulerOptions): ResolvedSchedulerOptions {
  const tuning = parseInput(TuningSchema, { workerId: options.workerId, pollMs: options.pollMs, leaseMs: options.leaseMs }, "scheduler options");
  return { redis: options.redis, keys: options.keys, tasks: options.tasks, logger: options.logger ?? silentLogger, ...tuning };
}
