import {
  AbortReason,
  type AgentSpec,
  type AgentSpecInput,
  DEFAULTS,
  ErrorCodes,
  FlotillaError,
  type JsonValue,
  type Keys,
  type Logger,
  parseInput,
  parseStored,
  RunnableSpecSchema,
  type SwarmSpec,
  type SwarmSpecInput,
  silentLogger,
} from "@flotilla/core";
import type { AgentEvent } from "@flotilla/events";
import { type FlotillaMetrics, METRICS } from "@flotilla/metrics";
import type { Redis } from "ioredis";
import { queueOfType } from "./definition.ts";
import { GraphEngine, type HandOff, type NodeEnd, type NodeResult } from "./engine.ts";
import { NodeTaskSchema, parseInstance } from "./instances.ts";
import type { NodeDefinition, Router } from "./node.ts";
import { resolveInstance } from "./resolver.ts";

/** An agent or swarm (or its JSON) serving as a node type by its name. */
export type AgentLike = { toJSON(): unknown } | AgentSpecInput | SwarmSpecInput;

export interface GraphWorkerOptions {
  /** Node functions, by their type. @default none */
  // biome-ignore lint/suspicious/noExplicitAny: node definitions of any input and output types
  nodes?: ReadonlyArray<NodeDefinition<any, any>>;
  /** Agents and swarms served as node types by their names (run through the worker's executor: in process, or Temporal mode). @default none */
  agents?: readonly AgentLike[];
  /** Routers by the name a node's `router` gives. @default none */
  routers?: Readonly<Record<string, Router>>;
  /** Queues to serve beyond each type's own `node.<type>` (for graph nodes that name a `queue`). @default none */
  queues?: readonly string[];
  /** How often this worker sweeps for hand-offs and starts a crash left unfinished. @default 1_000 */
  sweepIntervalMs?: number;
  /** A hand-off (or start) older than this is taken to be abandoned and finished by the sweeper. @default 5_000 */
  handoffGraceMs?: number;
  /**
   * Largest output a node may return, as JSON: the run keeps every node's output, and nodes after it
   * carry it in their inputs and state. A bigger one fails the node (OUTPUT_TOO_LARGE, no retry).
   * @default 1_048_576 (1 MiB)
   */
  maxOutputBytes?: number;
}

/** What the worker hands a node executor for one attempt (the shape of @flotilla/worker's NodeExecutionContext). */
export interface GraphNodeExecution {
  taskId: string;
  attempt: number;
  signal: AbortSignal;
  node: { run: string; id: string; type: string; [field: string]: unknown };
  input: JsonValue;
  state: JsonValue | undefined;
  emit(event: AgentEvent): void;
  runAgent(agent: AgentSpec | SwarmSpec, input: JsonValue): Promise<JsonValue>;
}

/** An agent or swarm as its checked JSON. */
const specOf = (a: AgentLike): AgentSpec | SwarmSpec =>
  parseInput(RunnableSpecSchema, "toJSON" in a && typeof a.toJSON === "function" ? a.toJSON() : a, "agent");

/** Results kept for hand-offs at most (a forgotten one is read back from its task). */
const RESULTS_MAX = 10_000;

const isObject = (v: unknown): v is Record<string, JsonValue> => v !== null && typeof v === "object" && !Array.isArray(v);

/**
 * Serves graph node types on a Worker: `new Worker({ graph: graphWorker({ nodes, agents }) })`. The
 * worker claims from each type's queue, runs node functions and agents, records their results, and
 * after each node task ends, hands the end on to its run (the successors' tasks are created then).
 * Its sweeper finishes hand-offs and run starts that a crashed process left.
 */
export class GraphWorker {
  readonly nodeTypes: readonly string[];
  readonly queues: readonly string[];
  // biome-ignore lint/suspicious/noExplicitAny: node definitions of any input and output types
  private readonly functions: ReadonlyMap<string, NodeDefinition<any, any>>;
  private readonly agents: ReadonlyMap<string, AgentSpec | SwarmSpec>;
  private readonly routers: Readonly<Record<string, Router>>;
  private readonly sweepIntervalMs: number;
  private readonly graceMs: number;
  private readonly maxOutputBytes: number;
  private engine: GraphEngine | undefined;
  private log: Logger = silentLogger;
  private metrics: FlotillaMetrics | undefined;
  private timer: NodeJS.Timeout | undefined;
  private sweeping: Promise<unknown> | undefined;
  private readonly handOffs = new Set<Promise<void>>();
  /** Ends told since the last hand-off batch went out. */
  private ending: HandOff[] = [];
  /** What execute returned for node tasks not yet ended, so their hand-off need not read it back. */
  private readonly results = new Map<string, NodeResult>();

  constructor(options: GraphWorkerOptions = {}) {
    this.functions = new Map((options.nodes ?? []).map((n) => [n.type, n]));
    this.agents = new Map(
      (options.agents ?? []).map((a) => {
        const spec = specOf(a);
        return [spec.name, spec];
      }),
    );
    const clash = [...this.agents.keys()].find((name) => this.functions.has(name));
    if (clash) throw new FlotillaError(ErrorCodes.VALIDATION, `node type ${clash} is both a node function and an agent`);
    this.routers = options.routers ?? {};
    this.nodeTypes = [...this.functions.keys(), ...this.agents.keys()];
    this.queues = [...new Set([...this.nodeTypes.map(queueOfType), ...(options.queues ?? [])])];
    this.sweepIntervalMs = options.sweepIntervalMs ?? 1000;
    this.graceMs = options.handoffGraceMs ?? 5000;
    this.maxOutputBytes = options.maxOutputBytes ?? DEFAULTS.maxNodeOutputBytes;
  }

  async start(deps: { redis: Redis; keys: Keys; logger: Logger; metrics?: FlotillaMetrics | undefined; signingSecret?: string | undefined }): Promise<void> {
    this.engine = new GraphEngine(deps.redis, deps.keys, deps.logger, { signingSecret: deps.signingSecret });
    this.log = deps.logger;
    const { metrics } = deps;
    this.metrics = metrics;
    this.engine.onRunEnded = (run, status, endedAt) =>
      metrics?.record(METRICS.graphRunDuration, Math.max(0, endedAt - run.createdAt) / 1000, { graph: run.graphName, status });
    this.timer = setInterval(() => {
      this.sweeping ??= this.engine!.sweep(this.queues, this.graceMs)
        .catch((err) => this.log.warn("graph sweep failed", { err }))
        .finally(() => {
          this.sweeping = undefined;
        });
    }, this.sweepIntervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.sweeping;
    await Promise.all(this.handOffs);
  }

  /**
   * A node task ended here: its run advances now (the sweeper does it later if this process dies
   * first). The ends of one settle batch (told in one turn of the event loop) are handed on
   * together: each run's in one advance call.
   */
  ended(taskId: string, end: { status: NodeEnd["status"]; error?: NodeEnd["error"] }): void {
    const engine = this.engine;
    const result = this.results.get(taskId);
    this.results.delete(taskId);
    if (!engine) return;
    // A completed task's result is what execute returned here (unless this worker forgot it).
    const known: NodeEnd | undefined = end.status !== "COMPLETED" ? end : result && { status: "COMPLETED", result };
    this.ending.push({ taskId, known });
    if (this.ending.length > 1) return;
    const p = new Promise<void>((resolve) => setImmediate(resolve))
      .then(() => {
        const batch = this.ending;
        this.ending = [];
        return engine
          .handOffMany(batch)
          .catch((err) => this.log.warn("graph hand-off failed; the sweeper will finish it", { tasks: batch.length, taskId: batch[0]!.taskId, err }));
      })
      .finally(() => this.handOffs.delete(p));
    this.handOffs.add(p);
  }

  async execute(ctx: GraphNodeExecution): Promise<JsonValue> {
    const engine = this.engine;
    if (!engine) throw new FlotillaError(ErrorCodes.SHUTDOWN, "the graph worker is not started");
    const node = parseStored(NodeTaskSchema, ctx.node, `node of task ${ctx.taskId}`);
    const run = await engine.load(node.run);
    const status = await engine.runs.status(node.run);
    if (!run || status !== "RUNNING") {
      // The run ended (a cancel or a failure) before this node's own cancel reached its task: it ends CANCELLED.
      throw new AbortReason(ErrorCodes.CANCELLED, `graph run ${node.run} is ${status?.toLowerCase() ?? "gone"}`, { retryable: false });
    }
    await engine.runs.nodeStarted(node.run, node.instance, ctx.taskId, ctx.attempt);
    let { input, state } = ctx;
    if (node.unites) ({ input, state } = await resolveInstance(engine.runs, node.run, run.compiled, run.record.input, parseInstance(node.instance)));
    const started = performance.now();
    const timed = { graph: run.record.graphName, node: node.id, type: node.type };
    let output: JsonValue;
    try {
      // A cancel that arrived during the reads above: a node function that listens for abort only once called would never hear it.
      ctx.signal.throwIfAborted();
      output = await this.run(node.type, input, state ?? {}, ctx, node.instance);
    } catch (err) {
      this.metrics?.record(METRICS.graphNodeDuration, (performance.now() - started) / 1000, { ...timed, status: "FAILED" });
      throw err;
    }
    this.metrics?.record(METRICS.graphNodeDuration, (performance.now() - started) / 1000, { ...timed, status: "COMPLETED" });
    const bytes = Buffer.byteLength(JSON.stringify(output));
    if (bytes > this.maxOutputBytes) {
      throw new FlotillaError(
        ErrorCodes.OUTPUT_TOO_LARGE,
        `node ${node.id} returned ${bytes} bytes; its worker keeps at most ${this.maxOutputBytes} (maxOutputBytes)`,
        {
          retryable: false,
        },
      );
    }
    if (node.fanOut !== undefined && (!Array.isArray(output) || output.length > node.fanOut)) {
      const why = Array.isArray(output) ? `${output.length} items, more than the run's maxFanOut of ${node.fanOut}` : "no list";
      throw new FlotillaError(ErrorCodes.FANOUT_INVALID, `fan-out node ${node.id} returned ${why}`, { retryable: false });
    }
    const next = await this.route(node, output, state ?? {});
    const result: NodeResult = { output, ...(next && { next }) };
    if (this.results.size >= RESULTS_MAX) this.results.delete(this.results.keys().next().value!);
    this.results.set(ctx.taskId, result);
    return result as unknown as JsonValue;
  }

  private async run(type: string, input: JsonValue, state: JsonValue, ctx: GraphNodeExecution, instance: string): Promise<JsonValue> {
    const fn = this.functions.get(type);
    if (fn) {
      const inputs = fn.inputSchema ? parseInput(fn.inputSchema, input, `inputs of node type ${type}`) : input;
      const out: unknown = await fn.execute(inputs, {
        signal: ctx.signal,
        emit: ctx.emit,
        state,
        run: { id: ctx.node.run },
        node: { id: ctx.node.id, type, instance, attempt: ctx.attempt },
        runAgent: (agent, agentInput) => ctx.runAgent(specOf(agent), agentInput),
      });
      return (fn.outputSchema ? parseInput(fn.outputSchema, out, `output of node type ${type}`) : (out ?? null)) as JsonValue;
    }
    const agent = this.agents.get(type);
    if (!agent) throw new FlotillaError(ErrorCodes.UNKNOWN_NODE_TYPE, `this worker does not serve node type "${type}"`, { retryable: false });
    const result = await ctx.runAgent(agent, input);
    // An agent's node output: its structured output when it has one, else its text.
    if (isObject(result) && result.output !== undefined) return result.output;
    return { text: isObject(result) ? (result.text ?? "") : "" };
  }

  /** The next nodes a node chose: its router's answer, else its output's `next`; undefined for all of them. */
  private async route(
    node: { id: string; next?: string[] | undefined; router?: string | undefined },
    output: JsonValue,
    state: JsonValue,
  ): Promise<string[] | undefined> {
    let chosen: string | readonly string[] | undefined;
    if (node.router !== undefined) {
      const router = this.routers[node.router];
      if (!router) throw new FlotillaError(ErrorCodes.INVALID_ROUTE, `this worker has no router "${node.router}" (node ${node.id})`, { retryable: false });
      chosen = await router(output, { state });
    } else if (node.next && isObject(output) && (typeof output.next === "string" || Array.isArray(output.next))) {
      chosen = output.next as string | string[];
    }
    if (chosen === undefined) return undefined;
    const list = typeof chosen === "string" ? [chosen] : [...chosen];
    const allowed = node.next ?? [];
    const wrong = list.find((id) => !allowed.includes(id));
    if (wrong !== undefined)
      throw new FlotillaError(ErrorCodes.INVALID_ROUTE, `node ${node.id} chose ${wrong}, which is not among its next (${allowed.join(", ")})`, {
        retryable: false,
      });
    return list;
  }
}

/** A GraphWorker for `new Worker({ graph: graphWorker({ nodes, agents }) })`. */
export const graphWorker = (options: GraphWorkerOptions = {}): GraphWorker => new GraphWorker(options);
