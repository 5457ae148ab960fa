// @flotilla/broker/testing: what tests and tools need beyond the production API — claiming without
// a worker, writing entries by hand.
import { CONSUMER_GROUP, PRIORITIES, type Priority } from "@flotilla/core";
import type { Redis } from "ioredis";
import { Broker, type StreamReply } from "./broker.ts";
import type { RawEntry } from "./entry.ts";

/** A Broker with the test-only calls. */
export class TestBroker extends Broker {
  /**
   * Adds an entry for the task named `name` (its id within the queue). Submitting does this as part
   * of creating the record; tests write entries themselves to corrupt or orphan them.
   */
  async enqueue(queue: string, name: string, priority: Priority = "normal"): Promise<string> {
    return (await this.redis.xadd(this.keys.lane(queue, priority), "*", "task", name)) as string;
  }

  /**
   * Claims up to `count` new entries for `consumer` the way a worker does without its scripts:
   * lanes in `order` (default high → normal → low) without blocking, then, when every lane is
   * empty, a blocking read of up to `blockMs` on all of them.
   */
  async claim(
    blocking: Redis,
    consumer: string,
    queues: readonly string[],
    count: number,
    blockMs: number,
    options: { order?: readonly Priority[] } = {},
  ): Promise<RawEntry[]> {
    const lanes = (options.order ?? PRIORITIES).flatMap((priority) => queues.map((queue) => ({ queue, priority })));
    const out: RawEntry[] = [];
    for (const lane of lanes) {
      if (out.length >= count) return out;
      const reply = (await blocking.xreadgroup(
        "GROUP",
        CONSUMER_GROUP,
        consumer,
        "COUNT",
        count - out.length,
        "STREAMS",
        this.stream(lane),
        ">",
      )) as StreamReply;
      out.push(...this.toEntries(reply, lanes));
    }
    if (out.length > 0) return out;
    return this.block(blocking, consumer, queues, count, blockMs);
  }
}

export { scripts } from "./scripts.ts";
