import { BackoffSchema, PrioritySchema, QueueNameSchema, SAFE_ID } from "@flotilla/core";
import type { NewTask } from "@flotilla/store";
import { z } from "zod";
import { SCHEDULE_DEFAULTS } from "./options.ts";
import { cronProblem, timezoneProblem } from "./ticks.ts";

/** A schedule's id: letters, digits and `_ . : -`, at most 100 (it ends up in task ids: `schedule:<id>:<tick>`). */
export const ScheduleIdSchema = z.string().min(1).max(100).regex(SAFE_ID, "use letters, digits and _ . : - only");

const DAY_MS = 86_400_000;

/** A schedule's definition: when it fires and what it does with ticks it could not fire on time. */
export const ScheduleSpecSchema = z
  .object({
    id: ScheduleIdSchema,
    /**
     * A cron pattern: 5 fields (minute hour day-of-month month day-of-week) or 6 with seconds first;
     * croner's nicknames (`@daily`, `@hourly`…) too. Exactly one of `cron` and `every`.
     */
    cron: z.string().trim().min(1).max(256).optional(),
    /** A fixed interval (ms, at least 1000), ticking at `createdAt + k * every`. Exactly one of `cron` and `every`. */
    every: z
      .number()
      .int()
      .min(1000)
      .max(366 * DAY_MS)
      .optional(),
    /** The IANA timezone the cron pattern is read in (DST included); ignored by `every`. @default "UTC" */
    timezone: z.string().min(1).max(64).default(SCHEDULE_DEFAULTS.timezone),
    /**
     * `skip`: a tick is skipped (counted in `skipped`) while the task fired by the previous tick has not
     * ended (COMPLETED, FAILED or CANCELLED). `allow`: every tick fires. @default "skip"
     */
    overlap: z.enum(["skip", "allow"]).default(SCHEDULE_DEFAULTS.overlap),
    /**
     * Ticks later than this when a worker gets to them (no worker was running) are counted in `missed`
     * and not fired; later ones fire in order, each its own task. At least 1000 (a live fleet may
     * look up to its poll interval late). @default 60_000
     */
    catchupWindowMs: z
      .number()
      .int()
      .min(1000)
      .max(30 * DAY_MS)
      .default(SCHEDULE_DEFAULTS.catchupWindowMs),
    /** Created paused: it fires nothing until resumed. @default false */
    paused: z.boolean().default(SCHEDULE_DEFAULTS.paused),
  })
  .strict()
  .superRefine((spec, ctx) => {
    if (spec.cron === undefined && spec.every === undefined) {
      ctx.addIssue({ code: "custom", path: ["cron"], message: "give a cron pattern or an interval (every)" });
    } else if (spec.cron !== undefined && spec.every !== undefined) {
      ctx.addIssue({ code: "custom", path: ["every"], message: "give a cron pattern or an interval (every), not both" });
    }
    const badZone = timezoneProblem(spec.timezone);
    if (badZone) {
      ctx.addIssue({ code: "custom", path: ["timezone"], message: badZone });
      return;
    }
    const badCron = spec.cron === undefined ? undefined : cronProblem(spec.cron, spec.timezone);
    if (badCron) ctx.addIssue({ code: "custom", path: ["cron"], message: badCron });
  });
/** A schedule's definition as given (defaults not applied). */
export type ScheduleSpec = z.input<typeof ScheduleSpecSchema>;
/** A schedule's definition with every default applied. */
export type ResolvedScheduleSpec = z.output<typeof ScheduleSpecSchema>;

/**
 * The task a schedule fires, as the store creates it: everything of a new task but its id, creation
 * time and submit id (set per tick), its delay, trace and graph hand-off (none for a scheduled task).
 */
export type TaskTemplate = Omit<NewTask, "taskId" | "createdAt" | "submitId" | "delayMs" | "trace" | "handoff">;

const isJson = (text: string): boolean => {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
};

/** A task template, checked when a schedule is created and again when it is read back. */
export const TaskTemplateSchema = z
  .object({
    queue: QueueNameSchema,
    agent: z.string().min(1).max(128),
    /** JSON of `{ agent, input }`, prepared by the client's submit validation. */
    payload: z.string().refine(isJson, "must be JSON"),
    /** What task lists show of the input (the client's inputPreviewChars). */
    inputPreview: z.string().max(1000).optional(),
    detailed: z.boolean(),
    maxRetries: z.number().int().min(0),
    maxDeliveries: z.number().int().min(1).optional(),
    timeoutMs: z.number().int().positive().optional(),
    metadata: z.record(z.string(), z.unknown()),
    backoff: BackoffSchema.optional(),
    priority: PrioritySchema.optional(),
    /** At most `limit` of the queue's tasks with this `key` run at once, fleet-wide (as the store enforces it). */
    concurrency: z
      .object({
        key: z.string().min(1).max(128).regex(SAFE_ID, "use letters, digits and _ . : - only"),
        limit: z.number().int().min(1).max(100_000),
      })
      .strict()
      .optional(),
  })
  .strict();

// A field NewTask gains that the schema misses fails the typecheck here (and record.ts types what
// it reads back as a TaskTemplate, so a type drifting apart fails there).
const fieldsCovered: [Exclude<keyof TaskTemplate, keyof z.output<typeof TaskTemplateSchema>>] extends [never] ? true : false = true;
void fieldsCovered;
