import { z } from "zod";

/**
 * What a worker is doing: `starting` (joining the fleet, not claiming yet), `running` (ready and
 * claiming), `draining` (stop() was called: it claims nothing new and finishes what it runs),
 * `not-ready` (running, but not claiming: see its reasons).
 */
export const WorkerStateSchema = z.enum(["starting", "running", "draining", "not-ready"]);
export type WorkerState = z.infer<typeof WorkerStateSchema>;

/** Why a worker is not ready (`redis`, `redis-full`, `claiming`, …), what it saw, since when (ms, its own clock). */
export const NotReadySchema = z.object({ reason: z.string(), detail: z.string(), since: z.number() });
export type NotReady = z.infer<typeof NotReadySchema>;

/** What each worker writes on every beat. */
export const WorkerRecordSchema = z.object({
  workerId: z.string(),
  hostname: z.string(),
  pid: z.number().int(),
  queues: z.array(z.string()),
  /** The graph node types the worker serves (@flotilla/graph), when it serves any. */
  nodeTypes: z.array(z.string()).optional(),
  /** The bus subscriptions the worker serves (`<topic>/<name>`). */
  subscriptions: z.array(z.string()).optional(),
  concurrency: z.number().int().positive(),
  running: z.array(z.string()),
  completed: z.number().int().min(0),
  failed: z.number().int().min(0),
  startedAt: z.number(),
  lastBeat: z.number(),
  heartbeatTtlMs: z.number().int().positive(),
  /** Absent in records written by workers that predate it. */
  state: WorkerStateSchema.optional(),
  /** Why it is not ready, when its state is `not-ready` (or `starting`/`draining` with a cause). */
  reasons: z.array(NotReadySchema).optional(),
  /** The version of @flotilla/worker it runs. */
  version: z.string().optional(),
  /** The application's own build (the worker's `buildId` option), when set. */
  buildId: z.string().optional(),
});
export type WorkerRecord = z.infer<typeof WorkerRecordSchema>;
