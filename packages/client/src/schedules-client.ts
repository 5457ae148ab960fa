import { type JsonValue, type SubmitOptions, ValidationError } from "@flotilla/core";
import { withRedis } from "@flotilla/core/redis";
import { type ScheduleInfo, type ScheduleSpec, ScheduleStore, type TaskTemplate } from "@flotilla/schedules";
import type { ClientContext } from "./context.ts";
import { type AgentLike, newTaskOf, prepareSubmission, type SubmissionLimits } from "./submission.ts";

/** The submit options a schedule's tasks take: all but those that name or time one task. */
export type ScheduledTaskOptions = Omit<SubmitOptions, "taskId" | "idempotencyKey" | "idempotencyWindowMs" | "delayMs" | "runAt">;

/** A schedule: when (`cron` with `timezone`, or `every` ms) and what (`agent`, `input`, submit `options`). */
export type CreateScheduleOptions = ScheduleSpec & {
  agent: AgentLike;
  input: JsonValue;
  /** How each tick's task is submitted (queue, priority, retries, timeout, metadata, concurrency key…). @default {} */
  options?: ScheduledTaskOptions;
};

/** Options that fix one task's id or time: a schedule's tasks get theirs from the tick. */
const PER_TASK = ["taskId", "idempotencyKey", "idempotencyWindowMs", "delayMs", "runAt"] as const;

/**
 * `client.schedules`: cron and interval schedules stored in Redis (@flotilla/schedules). Workers fire
 * them (every worker takes part unless started with `schedules: false`), each tick once: its task's
 * id is `<queue>/schedule:<id>:<tick ms>`.
 */
export class SchedulesClient {
  private readonly ctx: ClientContext;
  private readonly limits: SubmissionLimits;
  private readonly store: ScheduleStore;

  constructor(ctx: ClientContext, limits: SubmissionLimits) {
    this.ctx = ctx;
    this.limits = limits;
    this.store = new ScheduleStore(ctx.redis, ctx.keys);
  }

  /**
   * Creates the schedule, or replaces the one with this id (its counters kept, its next tick computed
   * afresh). The agent, input and options are checked as a submit checks them: a bad one is a
   * ValidationError naming it, before anything is written.
   */
  async create(schedule: CreateScheduleOptions): Promise<ScheduleInfo> {
    const { agent, input, options = {}, ...spec } = schedule;
    for (const field of PER_TASK) {
      if ((options as Record<string, unknown>)[field] !== undefined) {
        throw ValidationError.of("schedule", `options.${field}`, "a schedule's tasks are named and timed by their ticks");
      }
    }
    const s = prepareSubmission(agent, input, options, this.limits, Date.now());
    const { taskId: _, delayMs: __, ...template } = newTaskOf(s);
    const created = await withRedis(this.ctx.redis, () => this.store.create(spec, template satisfies TaskTemplate));
    return (await this.get(created.id))!;
  }

  /** A schedule by id, with its next tick, last fired task and counters; undefined when there is none. */
  get(id: string): Promise<ScheduleInfo | undefined> {
    return withRedis(this.ctx.redis, () => this.store.get(id));
  }

  /** Every schedule, paused ones included. */
  list(): Promise<ScheduleInfo[]> {
    return withRedis(this.ctx.redis, () => this.store.list());
  }

  /** Stops firing it until `resume`; false when there is no such schedule. */
  pause(id: string): Promise<boolean> {
    return withRedis(this.ctx.redis, () => this.store.pause(id));
  }

  /** Fires it again from its next tick after now (the ticks while it was paused are not made up). */
  resume(id: string): Promise<boolean> {
    return withRedis(this.ctx.redis, () => this.store.resume(id));
  }

  /** Deletes it; the tasks it fired are left as they are. False when there is no such schedule. */
  delete(id: string): Promise<boolean> {
    return withRedis(this.ctx.redis, () => this.store.delete(id));
  }
}
