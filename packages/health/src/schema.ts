import { z } from "zod";

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
});
export type WorkerRecord = z.infer<typeof WorkerRecordSchema>;
