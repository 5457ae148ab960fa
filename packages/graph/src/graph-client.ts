import { createKeys, IdempotencyKeySchema, IdempotencyWindowSchema, type JsonValue, JsonValueSchema, type Keys, newId, parseInput } from "@flotilla/core";
import { type ConnectionOptions, closeRedis, type OwnedRedis, openRedis, resolveConnectionOptions, SubscriberHub, withRedis } from "@flotilla/core/redis";
import { type EventSource, StatusFeed } from "@flotilla/events";
import { injectTrace, SpanKind, withSpan } from "@flotilla/metrics";
import type { Redis } from "ioredis";
import { z } from "zod";
import { type CompiledGraph, compileGraph } from "./compile.ts";
import { type Graph, type GraphInput, RunIdSchema } from "./definition.ts";
import { GraphEngine } from "./engine.ts";
import { GraphRunHandle } from "./run-handle.ts";
import { type ListRunsOptions, ListRunsOptionsSchema, listRuns, type RunPage } from "./run-list.ts";
import type { RunSummary } from "./run-store.ts";
import { GraphTemplates } from "./templates.ts";

export interface GraphClientOptions extends ConnectionOptions {
  /** Signed tasks: the node tasks it creates are signed with this secret (see the workers' `signingSecrets`). @default undefined: unsigned */
  signingSecret?: string;
}

export const StartGraphOptionsSchema = z
  .object({
    /** The run's id (also the start of its node tasks' names). @default a new time-ordered id */
    runId: RunIdSchema.optional(),
    /** The run's keys (and its record) expire this long after it ends. @default 86_400_000 (24 h) */
    ttlMs: z
      .number()
      .int()
      .positive()
      .max(30 * 86_400_000)
      .default(86_400_000),
    /** Node tasks keep every event type (text deltas). @default true */
    detailed: z.boolean().default(true),
    /** Put on every node task's metadata. @default {} */
    metadata: z.record(z.string(), JsonValueSchema).default({}),
    /** A second start with the same key within its window returns the first run's handle (and starts nothing). */
    idempotencyKey: IdempotencyKeySchema.optional(),
    /** How long an idempotency key holds. @default 86_400_000 (24 h) */
    idempotencyWindowMs: IdempotencyWindowSchema,
  })
  .strict();
export type StartGraphOptions = z.input<typeof StartGraphOptionsSchema>;

/** Connections a GraphClient borrows from its owner (a FlotillaClient): nothing of them is closed by it. */
export interface SharedConnections {
  redis: Redis;
  keys: Keys;
  /** Opens a connection for one stream's blocking reads (the stream closes it). */
  blocking: () => Redis;
  /** The subscriber and status feed node streams read through. */
  eventSource: () => Promise<EventSource>;
  /** The secret the node tasks it creates are signed with, if any. */
  signingSecret?: string | undefined;
}

/**
 * Starts graph runs and reads them back, from any process: `startGraph(graph | "name@version",
 * input)` returns a GraphRunHandle, `run(runId)` one for a run started elsewhere, `listRuns()` the
 * runs, `templates` the graphs stored by name. (`FlotillaClient.graphs` is one, on the client's
 * connections.)
 */
export class GraphClient {
  readonly engine: GraphEngine;
  /** Graphs stored by name, with versions. */
  readonly templates: GraphTemplates;
  private readonly keys: Keys;
  private readonly shared: SharedConnections;
  private readonly owned: { conn: OwnedRedis; hub?: SubscriberHub } | undefined;
  private source: Promise<EventSource> | undefined;

  constructor(options: GraphClientOptions = {}, shared?: SharedConnections) {
    if (shared) {
      this.shared = shared;
    } else {
      // The client's rule: a call while Redis does not answer fails with a ConnectionError after
      // connectTimeoutMs, rather than waiting for it as long as it takes.
      const { redis, prefix, connectTimeoutMs } = resolveConnectionOptions(options);
      const conn = openRedis(redis, "command", { failFast: true, connectTimeoutMs });
      const owned: { conn: OwnedRedis; hub?: SubscriberHub } = { conn };
      this.owned = owned;
      const keys = createKeys(prefix);
      this.shared = {
        redis: conn.redis,
        keys,
        blocking: () => openRedis(redis, "blocking", { connectTimeoutMs }).redis,
        eventSource: () => {
          this.source ??= (async () => {
            owned.hub = new SubscriberHub(openRedis(redis, "subscriber", { failFast: true, connectTimeoutMs }), { readyTimeoutMs: connectTimeoutMs });
            return { redis: conn.redis, hub: owned.hub, keys, statusFeed: new StatusFeed(owned.hub, keys) };
          })();
          return this.source;
        },
      };
    }
    this.keys = this.shared.keys;
    this.engine = new GraphEngine(this.shared.redis, this.keys, undefined, { signingSecret: this.shared.signingSecret ?? options.signingSecret });
    this.templates = new GraphTemplates(this.shared.redis, this.keys);
  }

  /**
   * Starts a run of `graph` (JSON, the builder's output, compiled, or a stored template's
   * `name` / `name@version`) on `input`. A start with a `runId` that exists already, or with an
   * `idempotencyKey` used within its window, returns that run's handle and starts nothing.
   */
  startGraph(graph: GraphInput | Graph | CompiledGraph | string, input: JsonValue, options: StartGraphOptions = {}): Promise<GraphRunHandle> {
    // Redis's failures as Flotilla's errors (a ConnectionError when it does not answer), as the client's calls.
    return withRedis(this.shared.redis, () => this.start(graph, input, options));
  }

  private async start(graph: GraphInput | Graph | CompiledGraph | string, input: JsonValue, options: StartGraphOptions): Promise<GraphRunHandle> {
    const source = typeof graph === "string" ? await this.templates.get(graph) : graph;
    const compiled = "topology" in source ? source : compileGraph(source);
    const o = parseInput(StartGraphOptionsSchema, options, "graph run options");
    const checked = parseInput(JsonValueSchema, input, "graph input");
    let runId = o.runId ?? newId();
    if (o.idempotencyKey !== undefined) {
      const first = (await this.shared.redis.set(this.keys.idempotency(`graph-run:${o.idempotencyKey}`), runId, "PX", o.idempotencyWindowMs, "NX", "GET")) as
        | string
        | null;
      // The key's first run: started unless its start never got as far as its record.
      if (first !== null) {
        runId = first;
        if ((await this.engine.runs.status(runId)) !== undefined) return this.run(runId);
      }
    }
    // The run is one trace: its node tasks continue the start's span.
    await withSpan(
      "flotilla.graph.start",
      { kind: SpanKind.PRODUCER, attributes: { "flotilla.graph": compiled.graph.name, "flotilla.run_id": runId } },
      async () => {
        const carrier = injectTrace();
        await this.engine.start(runId, compiled, checked, {
          ttlMs: o.ttlMs,
          detailed: o.detailed,
          metadata: o.metadata,
          ...(carrier && { trace: JSON.stringify(carrier) }),
        });
      },
    );
    return this.run(runId);
  }

  /** A handle on a run started anywhere. */
  run(runId: string): GraphRunHandle {
    return new GraphRunHandle(parseInput(RunIdSchema, runId, "run id"), this.engine, this.shared.blocking, this.shared.eventSource);
  }

  /** Runs newest first, by status and graph name, a page at a time. */
  listRuns(options: ListRunsOptions = {}): Promise<RunPage> {
    const o = parseInput(ListRunsOptionsSchema, options, "list runs options");
    return withRedis(this.shared.redis, () => listRuns(this.shared.redis, this.keys, this.engine.runs, o));
  }

  /** Some runs' summaries at once (undefined for a run that does not exist or expired), in the order asked. */
  summaries(runIds: readonly string[]): Promise<Array<RunSummary | undefined>> {
    const ids = runIds.map((id) => parseInput(RunIdSchema, id, "run id"));
    return withRedis(this.shared.redis, () => this.engine.runs.summaries(ids));
  }

  async close(): Promise<void> {
    if (!this.owned) return;
    await this.owned.hub?.close();
    await closeRedis(this.owned.conn);
  }
}
