import { type Lane, parseEntry } from "@flotilla/broker";
import { type Logger, splitTaskId } from "@flotilla/core";
import type { StartReply } from "@flotilla/store";
import type { AttemptRunner } from "./attempt.ts";
import type { InFlight } from "./in-flight.ts";
import type { OutcomeRecorder } from "./outcome-recorder.ts";

/**
 * Takes up each claimed entry: a started task runs (and its outcome is recorded); an entry that
 * cannot run — its record gone, malformed, its record corrupt — is dead-lettered with the reason (a
 * corrupt record is also ended FAILED, so its waiters hear). Either way the work is tracked in
 * flight until it is done, so stop() waits for it. A task past its delivery limit was failed and
 * dead-lettered by the script that answered (one call, so no crash can split the two): it is only
 * reported.
 */
export class Dispatcher {
  private readonly inFlight: InFlight;
  private readonly attempts: AttemptRunner;
  private readonly recorder: OutcomeRecorder;
  private readonly log: Logger;
  private readonly onError: (err: unknown) => void;
  private readonly lapsed: (leaseFrom: number) => boolean;

  /**
   * @param lapsed whether a lease given at `leaseFrom` (monotonic ms) may have lapsed by now (see
   *   LeaseKeeper.lapsed): a claim whose answer came that late is not run
   */
  constructor(
    inFlight: InFlight,
    attempts: AttemptRunner,
    recorder: OutcomeRecorder,
    log: Logger,
    onError: (err: unknown) => void,
    lapsed: (leaseFrom: number) => boolean,
  ) {
    this.lapsed = lapsed;
    this.inFlight = inFlight;
    this.attempts = attempts;
    this.recorder = recorder;
    this.log = log;
    this.onError = onError;
  }

  /**
   * `leaseFrom`: when the request that claimed the entry was sent (monotonic ms; see
   * Running.leaseFrom).
   */
  dispatch(queue: string, reply: StartReply, reclaimed: boolean, leaseFrom: number): void {
    const lane: Lane = { queue, priority: reply.priority };
    const { entryId } = reply;
    if (reply.kind === "skip") {
      // Cancelled while waiting, already finished, or run by another entry: the script settled it.
      this.log.debug("entry skipped", { queue, entryId, taskId: reply.taskId, reason: reply.reason, reclaimed });
      return;
    }
    const fail = (err: unknown) => {
      this.log.error("task handling failed", { queue, entryId, err });
      this.onError(err);
    };
    if (reply.kind === "run") {
      if (this.lapsed(leaseFrom)) {
        // The claim's answer came back after its lease may have lapsed (Redis was out of reach):
        // another worker may run the task already. The entry stays pending; whoever takes it over runs it.
        this.log.warn("claim answered too late to run: leaving the task to whoever takes it over", { queue, entryId, taskId: reply.taskId });
        return;
      }
      this.inFlight.track(
        lane,
        entryId,
        reply.taskId,
        leaseFrom,
        async (controller) => {
          const ended = await this.attempts.run(lane, reply, controller, () => this.inFlight.markFinished(lane, entryId));
          if (ended) await this.recorder.record(lane, entryId, reply.taskId, ended.outcome, ended.traceId);
          else this.log.warn("attempt lost its claim; leaving the outcome to its owner", { taskId: reply.taskId, attempt: reply.attempt });
        },
        fail,
      );
      return;
    }
    if (reply.kind === "corrupt") {
      const { taskId } = reply;
      this.inFlight.track(
        lane,
        entryId,
        taskId,
        leaseFrom,
        () => this.recorder.failCorrupt(lane, entryId, taskId, reply.reason),
        (err) => {
          this.log.error("could not dead-letter entry", { queue, entryId, err });
          this.onError(err);
        },
      );
      return;
    }
    if (reply.kind === "dead") {
      this.recorder.deadLettered(lane, entryId, reply.reason, reply.taskId);
      return;
    }
    const [reason, fields, taskId, extra] = deadLetterOf(lane, reply);
    this.inFlight.track(
      lane,
      entryId,
      taskId ?? "",
      leaseFrom,
      () => this.recorder.deadLetter(lane, entryId, reason, fields, taskId, extra),
      (err) => {
        this.log.error("could not dead-letter entry", { queue, entryId, err });
        this.onError(err);
      },
    );
  }
}

type DeadLetterOf = [reason: string, fields: Record<string, string> | null, taskId: string | undefined, extra?: Record<string, unknown>];

/** Why an entry that cannot run is dead-lettered, and what the letter keeps. */
function deadLetterOf(lane: Lane, reply: Exclude<StartReply, { kind: "run" | "skip" | "corrupt" | "dead" }>): DeadLetterOf {
  switch (reply.kind) {
    case "missing":
      return ["task record not found (expired or never written)", { task: splitTaskId(reply.taskId).name }, reply.taskId];
    default: {
      const parsed = parseEntry({ ...lane, entryId: reply.entryId, fields: reply.fields });
      return [parsed.ok ? "malformed queue entry" : parsed.reason, reply.fields, undefined];
    }
  }
}
