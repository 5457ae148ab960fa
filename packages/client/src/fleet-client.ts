import type { QueueDepth } from "@flotilla/broker";
import { parseInput, QueueNameSchema } from "@flotilla/core";
import { withRedis } from "@flotilla/core/redis";
import { type FleetStatus, type FleetStatusOptions, getFleetStatus } from "@flotilla/health";
import type { ClientContext } from "./context.ts";

export type { QueueDepth };

/** `client.fleet`: the workers and the queues they serve. */
export class FleetClient {
  private readonly ctx: ClientContext;

  constructor(ctx: ClientContext) {
    this.ctx = ctx;
  }

  /** Live workers with their figures, and workers that stopped beating as dead. */
  async status(options: FleetStatusOptions = {}): Promise<FleetStatus> {
    return withRedis(this.ctx.redis, () => getFleetStatus(this.ctx.redis, this.ctx.keys, options));
  }

  /** Waiting, in-flight and delayed entries of a queue, over its lanes, and how long its oldest waiting entry has waited. */
  async queueDepth(queue = "default"): Promise<QueueDepth> {
    const q = parseInput(QueueNameSchema, queue, "queue");
    return withRedis(this.ctx.redis, () => this.ctx.broker.depth(q));
  }
}
