import { createHash } from "node:crypto";
import { DuplicateTaskError, type FlotillaClient, type TaskHandle } from "@flotilla/client";
import { type BackoffOptions, ErrorCodes, FlotillaError, type JsonValue, parseInput, UnrecoverableError, ValidationError } from "@flotilla/core";
import { ENV, readEnv } from "@flotilla/core/redis";
import type { Redis } from "ioredis";
import { GroupConsumer } from "./consumer.ts";
import type { BusEvent } from "./event.ts";
import { Publisher } from "./publisher.ts";
import { Replier } from "./replier.ts";
import { BusOptionsSchema, type BusTuning, WebhookSecretSchema, WebhooksOptionsSchema } from "./schemas.ts";
import { type HandlerContext, type Subscription, subscribe, subscriptionId } from "./subscription.ts";
import { WEBHOOK_SUBSCRIPTION, WEBHOOK_TOPIC, type WebhookOptions, type WebhookSecret, webhookHandler } from "./webhooks.ts";

export interface BusWorkerOptions extends BusTuning {
  /** The subscriptions this worker serves (see `subscribe()`). */
  subscriptions: readonly Subscription[];
  /**
   * Webhook replies: this worker POSTs those waiting on the bus's webhook topic (signed with
   * `secret` when set — a list for a rotation, the first signs — or with the subscription's own
   * `webhookSecret`), retried with backoff; `false` leaves them to other workers.
   * @default { secret: FLOTILLA_WEBHOOK_SECRET, concurrency: 10, maxRetries: 8, backoff: 1 s ×2 to 5 min, timeoutMs: 10_000 }
   */
  webhooks?: (WebhookOptions & { concurrency?: number; maxRetries?: number; backoff?: BackoffOptions }) | false;
}

/** The parts of a worker a bus worker uses (what `Worker` passes to a SubscriptionRunner's start). */
export interface BusWorkerStart {
  redis: Redis;
  keys: import("@flotilla/core").Keys;
  logger: import("@flotilla/core").Logger;
  metrics: import("@flotilla/metrics").FlotillaMetrics;
  workerId: string;
  blocking: () => Redis;
  connection: import("@flotilla/core/redis").RedisConnection | undefined;
  /** The secret the agent tasks it creates are signed with (the worker's), if any. */
  signingSecret?: string | undefined;
}

/**
 * Serves bus subscriptions in a worker: `new Worker({ bus: busWorker({ subscriptions: [subscribe(…)] }) })`.
 * Each subscription gets a consumer in its group under the worker's id; the worker's heartbeat lists them.
 */
export function busWorker(options: BusWorkerOptions): BusWorker {
  return new BusWorker(options);
}

export class BusWorker {
  readonly subscriptions: readonly string[];
  private readonly all: readonly Subscription[];
  private consumers: GroupConsumer[] = [];
  private client: FlotillaClient | undefined;
  private unobserve: (() => void) | undefined;
  private readonly tuning;
  /** What the webhook handler signs with: read by it at each delivery, so `setDefaultWebhookSecret` before start() takes effect. */
  private readonly webhookOptions: WebhookOptions | undefined;
  /** Where the worker-wide secret came from: the options win over the deployment's (flag, then FLOTILLA_WEBHOOK_SECRET). */
  private webhookSecretFrom: "options" | "deployment" | "environment" | undefined;

  constructor(options: BusWorkerOptions) {
    const { subscriptions, webhooks, ...tuning } = options;
    this.tuning = parseInput(BusOptionsSchema, tuning, "bus worker options");
    if (webhooks !== false && webhooks !== undefined) checkWebhooks(webhooks);
    const fromEnv = webhookSecretFromEnv();
    this.webhookOptions = webhooks === false ? undefined : { ...webhooks, secret: webhooks?.secret ?? fromEnv };
    this.webhookSecretFrom = webhooks === false ? undefined : webhooks?.secret !== undefined ? "options" : fromEnv ? "environment" : undefined;
    const secrets = new Map(subscriptions.filter((s) => s.options.webhookSecret !== undefined).map((s) => [subscriptionId(s), s.options.webhookSecret!]));
    const secretOf = (topic: string, name: string) => secrets.get(`${topic}/${name}`);
    const own =
      webhooks === false
        ? []
        : [
            subscribe(WEBHOOK_TOPIC, webhookHandler(this.webhookOptions!, secretOf), {
              name: WEBHOOK_SUBSCRIPTION,
              from: "start",
              concurrency: webhooks?.concurrency ?? 10,
              maxRetries: webhooks?.maxRetries ?? 8,
              backoff: webhooks?.backoff ?? { delayMs: 1000, maxDelayMs: 300_000, jitter: 0.2 },
            }),
          ];
    this.all = [...subscriptions, ...own];
    this.subscriptions = subscriptions.map(subscriptionId);
  }

  /**
   * The worker-wide webhook secret a deployment gives (flotilla-worker's `--webhook-secret`): over
   * FLOTILLA_WEBHOOK_SECRET, under a `webhooks.secret` set in code (the rule of every entry point:
   * code, then flag, then environment). Returns false when it is not used — the options set their
   * own secret, or this worker delivers no webhooks (`webhooks: false`) — for the caller to say so.
   */
  setDefaultWebhookSecret(secret: WebhookSecret): boolean {
    const parsed = WebhookSecretSchema.safeParse(secret);
    if (!parsed.success) throw ValidationError.of("webhook secret", "secret", parsed.error.issues[0]?.message ?? "invalid");
    if (!this.webhookOptions || this.webhookSecretFrom === "options") return false;
    this.webhookOptions.secret = parsed.data;
    this.webhookSecretFrom = "deployment";
    return true;
  }

  async start(deps: BusWorkerStart): Promise<void> {
    const publisher = new Publisher(deps.redis, deps.keys, { ...this.tuning, source: this.tuning.source ?? deps.workerId }, deps.metrics);
    const replier = new Replier(publisher, this.tuning.source ?? deps.workerId);
    if (this.all.some((s) => s.agent)) {
      const { FlotillaClient } = await import("@flotilla/client");
      this.client = new FlotillaClient({ redis: deps.connection, prefix: deps.keys.prefix, ...(deps.signingSecret && { signingSecret: deps.signingSecret }) });
    }
    this.consumers = this.all.map(
      (sub) =>
        new GroupConsumer(sub, this.runnerOf(sub), {
          redis: deps.redis,
          blocking: deps.blocking,
          keys: deps.keys,
          publisher,
          replier,
          tuning: this.tuning,
          consumer: deps.workerId,
          logger: deps.logger,
          metrics: deps.metrics,
        }),
    );
    await Promise.all(this.consumers.map((c) => c.start()));
    this.unobserve = deps.metrics.observeBus(() =>
      this.consumers.map((c, i) => ({ topic: this.all[i]!.topic, group: this.all[i]!.options.name, ...c.figures })),
    );
  }

  async stop(drainMs: number): Promise<void> {
    await Promise.all(this.consumers.map((c) => c.stop(drainMs)));
    this.unobserve?.();
    await this.client?.close();
  }

  private runnerOf(sub: Subscription): (event: BusEvent, ctx: HandlerContext) => Promise<unknown> {
    if (sub.handler) {
      const handler = sub.handler;
      return async (event, ctx) => handler(event, ctx);
    }
    return (event, ctx) => this.runAgent(sub, event, ctx);
  }

  /**
   * Runs the subscription's agent as a Flotilla task for the event: its name comes from the topic,
   * the subscription and the event id, so a redelivery (a consumer crashed while it waited) finds
   * the same task instead of making another. The task's own retries are the subscription's; a task
   * that failed for good dead-letters the event.
   */
  private async runAgent(sub: Subscription, event: BusEvent, ctx: HandlerContext): Promise<unknown> {
    const client = this.client!;
    const queue = sub.options.queue ?? "default";
    const name = agentTaskName(event.topic, sub.options.name, event.id);
    let handle: TaskHandle;
    try {
      handle = await client.submit(sub.agent!, event.payload, {
        queue,
        taskId: name,
        maxRetries: sub.options.maxRetries,
        ...(sub.options.backoff && { backoff: sub.options.backoff }),
        metadata: {
          busTopic: event.topic,
          busEvent: event.id,
          busSubscription: sub.options.name,
          ...(event.correlationId && { correlationId: event.correlationId }),
        },
      });
    } catch (err) {
      if (!(err instanceof DuplicateTaskError)) throw err;
      handle = client.handle(`${queue}/${name}`);
    }
    try {
      return (await handle.result({ signal: ctx.signal })) as JsonValue;
    } catch (err) {
      if (err instanceof FlotillaError && (err.code === ErrorCodes.TASK_FAILED || err.code === ErrorCodes.TASK_CANCELLED)) {
        throw new UnrecoverableError(`task ${handle.taskId} ${err.code === ErrorCodes.TASK_CANCELLED ? "was cancelled" : "failed"}: ${err.message}`, err.code, {
          cause: err,
        });
      }
      throw err;
    }
  }
}

/** `webhooks` checked strictly: a key it does not know is named (`webhooks.secrett`), not ignored. */
function checkWebhooks(webhooks: object): void {
  const unknown = Object.keys(webhooks).find((key) => !(key in WebhooksOptionsSchema.shape));
  if (unknown !== undefined) throw ValidationError.of("bus worker options", `webhooks.${unknown}`, "is not a webhooks option");
  const parsed = WebhooksOptionsSchema.safeParse(webhooks);
  const issue = parsed.error?.issues[0];
  if (issue) throw ValidationError.of("bus worker options", ["webhooks", ...issue.path.map(String)].join("."), issue.message);
}

/** FLOTILLA_WEBHOOK_SECRET's secrets (comma-separated, current first), if set. */
function webhookSecretFromEnv(): string[] | undefined {
  const list = readEnv(ENV.webhookSecret);
  if (list === undefined) return undefined;
  const secrets = list
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  if (secrets.length === 0) throw ValidationError.of("bus worker options", ENV.webhookSecret, "names no secret");
  return secrets;
}

/** The task name of an agent subscription's event: `bus.<topic>.<subscription>.<event id>`, hashed when longer than a task name may be. */
export function agentTaskName(topic: string, subscription: string, eventId: string): string {
  const plain = `bus.${topic}.${subscription}.${eventId}`;
  if (plain.length <= 128) return plain;
  return `bus.${createHash("sha1").update(`${topic}/${subscription}`).digest("hex").slice(0, 20)}.${eventId}`;
}
