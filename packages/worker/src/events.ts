import type { TaskError } from "@flotilla/core";
import type { FinishInput } from "@flotilla/store";
import type { ReadinessState } from "./readiness.ts";

export interface TaskEndEvent {
  taskId: string;
  attempt: number;
  status: FinishInput["status"];
  error?: TaskError | undefined;
  /** Whether Redis accepted the outcome (a stale attempt's is refused). */
  recorded: boolean;
}

export interface DeadLetteredEvent {
  queue: string;
  entryId: string;
  reason: string;
  taskId: string | undefined;
}

/** What a Worker emits: `worker.on("task:ended", (e) => …)` is typed by this map. */
export interface WorkerEvents {
  /** An attempt started running here. */
  "task:started": [{ taskId: string; attempt: number }];
  /** An attempt ended here (its outcome recorded, or refused as stale). */
  "task:ended": [TaskEndEvent];
  /** An entry moved to its queue's dead letters: unparseable, its record gone, the delivery limit, or a final failure. */
  "entry:dead-lettered": [DeadLetteredEvent];
  /** Something failed that the worker rode out (a claim, a dead-lettering); it carries on. */
  "worker:error": [unknown];
  /** The worker became unready (a reason was raised) or a reason cleared; `ready` says which way it stands now. */
  "worker:readiness": [ReadinessState];
}
