import { CorruptRecordError, isTerminal, type Keys, type Logger, taskIdOf } from "@flotilla/core";
import type { NewTask, TaskStore } from "@flotilla/store";
import type { Redis } from "ioredis";
import { planRound } from "./plan.ts";
import type { ScheduleRecord } from "./record.ts";
import type { TaskTemplate } from "./schemas.ts";
import { scripts } from "./scripts.ts";
import { tickClock } from "./ticks.ts";

export interface FireContext {
  redis: Redis;
  keys: Keys;
  tasks: TaskStore;
  workerId: string;
  logger: Logger;
}

/** What firing one schedule did: ticks fired and recorded by this round, and its next tick. */
export interface FireOutcome {
  fired: number;
  /** The schedule's next tick (ms) as this round left it; undefined when nothing was recorded. */
  next: number | undefined;
}

/** A tick's task name: fixed by the schedule and the tick, so every worker firing the tick names the same task. */
export const tickTaskName = (scheduleId: string, tick: number): string => `schedule:${scheduleId}:${tick}`;

/** The task a tick fires: the template, with the tick's fixed id and submit id and the schedule's marks in its metadata. */
export function tickTask(scheduleId: string, template: TaskTemplate, tick: number, workerId: string): NewTask {
  const name = tickTaskName(scheduleId, tick);
  return {
    ...template,
    taskId: taskIdOf(template.queue, name),
    // The same submit id makes a second create of the same tick (another worker, a resend) a no-op
    // reported as created, so a tick has one task however many workers fire it.
    submitId: name,
    metadata: { ...template.metadata, schedule: scheduleId, scheduledFor: tick, firedBy: workerId },
  };
}

/**
 * Fires one schedule taken by a round at `now` (Redis's clock): plans its due ticks (catch-up and
 * overlap rules), creates their tasks, then records the round with a compare-and-set on the next
 * tick and revision it read. A round overtaken by another worker (its lease lapsed) records nothing;
 * the tasks both created are the same tasks.
 */
export async function fireSchedule(ctx: FireContext, record: ScheduleRecord, now: number): Promise<FireOutcome> {
  const from = record.nextTickAt;
  // Paused after the round took it: pausing already took it out of the due order.
  if (from === undefined) return { fired: 0, next: undefined };
  const { spec, template } = record;
  const clock = tickClock(spec, record.createdAt);
  const previousEnded = spec.overlap === "skip" && from <= now && record.lastTaskId !== undefined ? await taskEnded(ctx, record.lastTaskId) : true;
  const plan = planRound({ clock, from, now, catchupWindowMs: spec.catchupWindowMs, overlap: spec.overlap, previousEnded });
  if (plan.next === undefined) {
    // Only a cron pattern running out (croner stops at the year 3000): nothing is recorded, and the lease retries it.
    ctx.logger.error("schedule has no next tick: left as it is", { schedule: record.id, from });
    return { fired: 0, next: undefined };
  }
  const fired = await createTasks(ctx, record, plan.fire);
  const last = fired.at(-1);
  const recorded = await scripts.advance.run(
    ctx.redis,
    [ctx.keys.schedule(record.id), ctx.keys.schedulesDue()],
    [
      record.id,
      record.stored.nextTickAt,
      record.stored.rev,
      plan.next,
      last ?? "",
      last === undefined ? "" : taskIdOf(template.queue, tickTaskName(record.id, last)),
      fired.length,
      plan.skipped + (plan.fire.length - fired.length),
      plan.missed,
      ctx.workerId,
    ],
  );
  if (recorded !== 1) {
    ctx.logger.debug("schedule moved on during the round: another worker recorded it", { schedule: record.id, from });
    return { fired: 0, next: undefined };
  }
  return { fired: fired.length, next: plan.next };
}

/** Creates the ticks' tasks in one call; returns the ticks that have their task. */
async function createTasks(ctx: FireContext, record: ScheduleRecord, ticks: readonly number[]): Promise<number[]> {
  if (ticks.length === 0) return [];
  const { queue } = record.template;
  const { created, lanesMade } = await ctx.tasks.createMany(
    queue,
    ticks.map((tick) => tickTask(record.id, record.template, tick, ctx.workerId)),
  );
  if (lanesMade) await ctx.tasks.registerQueue(queue);
  const taken = ticks.filter((_, i) => created[i] !== true);
  if (taken.length > 0) {
    // A task of that name exists with another submit id: made by something other than this schedule.
    ctx.logger.warn("a tick's task name is taken by another task: tick counted as skipped", { schedule: record.id, ticks: taken });
  }
  return ticks.filter((_, i) => created[i] === true);
}

/** Whether the task a schedule fired last has ended; one that expired or cannot be read counts as ended, so it never blocks the schedule for good. */
async function taskEnded(ctx: FireContext, taskId: string): Promise<boolean> {
  try {
    const [task] = await ctx.tasks.getMany([taskId]);
    return task === undefined || isTerminal(task.status);
  } catch (err) {
    if (!(err instanceof CorruptRecordError)) throw err;
    ctx.logger.warn("the schedule's previous task cannot be read: taken as ended", { taskId, err });
    return true;
  }
}
