import type { DeadLetter } from "@flotilla/broker";
import { DeadLetterNotFoundError, parseInput, QueueNameSchema, splitTaskId, TaskIdSchema, ValidationError } from "@flotilla/core";
import { withRedis } from "@flotilla/core/redis";
import type { ClientContext } from "./context.ts";
import { TaskHandle } from "./task-handle.ts";

/** `client.deadLetters`: the entries of a queue that could not be run, and running them again. */
export class DeadLettersClient {
  private readonly ctx: ClientContext;

  constructor(ctx: ClientContext) {
    this.ctx = ctx;
  }

  /** Oldest first, with the reason; `after` pages on from the last id seen. */
  async list(queue = "default", options: { count?: number; after?: string } = {}): Promise<DeadLetter[]> {
    const q = parseInput(QueueNameSchema, queue, "queue");
    return withRedis(this.ctx.redis, () => this.ctx.broker.listDeadLetters(q, options));
  }

  async get(queue: string, deadLetterId: string): Promise<DeadLetter | undefined> {
    const q = parseInput(QueueNameSchema, queue, "queue");
    return withRedis(this.ctx.redis, () => this.ctx.broker.getDeadLetter(q, deadLetterId));
  }

  /** Deletes every dead letter of a queue (the FAILED records of their tasks stay); returns how many there were. */
  async purge(queue: string): Promise<number> {
    const q = parseInput(QueueNameSchema, queue, "queue");
    return withRedis(this.ctx.redis, () => this.ctx.broker.purgeDeadLetters(q));
  }

  /** The newest dead letter of a task, found newest first in its queue's dead letters; undefined when none is left. */
  async forTask(taskId: string): Promise<DeadLetter | undefined> {
    const id = parseInput(TaskIdSchema, taskId, "task id");
    return withRedis(this.ctx.redis, () => this.ctx.broker.findDeadLetter(splitTaskId(id).queue, id));
  }

  /**
   * Sends a dead-lettered task back to its queue for another run: the task returns to PENDING with
   * its retries and delivery allowance reset, and the dead letter is removed. A letter that is not
   * there is a DeadLetterNotFoundError.
   */
  async requeue(queue: string, deadLetterId: string): Promise<TaskHandle> {
    const q = parseInput(QueueNameSchema, queue, "queue");
    return withRedis(this.ctx.redis, async () => {
      const letter = await this.ctx.broker.getDeadLetter(q, deadLetterId);
      if (!letter) throw new DeadLetterNotFoundError(q, deadLetterId);
      if (!letter.taskId) throw ValidationError.of("dead letter", "deadLetterId", `${deadLetterId} is a malformed entry with no task to re-queue`);
      const revived = await this.ctx.store.requeueDeadLetter({ ...letter, taskId: letter.taskId });
      if (revived.outcome === "gone") throw new DeadLetterNotFoundError(q, deadLetterId);
      if (revived.outcome === "refused") {
        throw ValidationError.of("dead letter", "deadLetterId", `task ${letter.taskId} is ${revived.status ?? "gone"}; only FAILED tasks can be re-queued`);
      }
      return new TaskHandle(this.ctx, letter.taskId);
    });
  }
}
