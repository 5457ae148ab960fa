// @flotilla/schedules: cron and interval schedules stored in Redis, each tick fired once by
// whichever process runs a Scheduler (a worker): there is no scheduler process.
export { type FireOutcome, tickTask, tickTaskName } from "./fire.ts";
export { type ResolvedSchedulerOptions, SCHEDULE_DEFAULTS, SCHEDULER_DEFAULTS, type SchedulerOptions, schedulerOptions } from "./options.ts";
export { MAX_MISSED_PER_ROUND, MAX_TICKS_PER_ROUND, type PlanInput, planRound, type RoundPlan } from "./plan.ts";
export type { ScheduleInfo } from "./record.ts";
export { type CreateResult, SCHEDULE_CONTENDED, ScheduleStore } from "./schedule-store.ts";
export { SCHEDULES_PER_ROUND, Scheduler } from "./scheduler.ts";
export {
  type ResolvedScheduleSpec,
  ScheduleIdSchema,
  type ScheduleSpec,
  ScheduleSpecSchema,
  type TaskTemplate,
  TaskTemplateSchema,
} from "./schemas.ts";
export { type Cadence, cronProblem, nextTick, type TickClock, tickClock, timezoneProblem } from "./ticks.ts";
