import { ErrorCodes, FlotillaError, type JsonValue, parseJsonOr, type TaskStatus } from "@flotilla/core";
import type { EventSource } from "@flotilla/events";
import type { Redis } from "ioredis";
import type { Graph } from "./definition.ts";
import type { GraphEngine } from "./engine.ts";
import { RunNotFoundError, RunNotRetryableError } from "./errors.ts";
import { type Instance, parseInstance } from "./instances.ts";
import { resolveInstances } from "./resolver.ts";
import type { NodeState, RunStatus, RunSummary } from "./run-store.ts";
import { type GraphStreamEvent, mergeRunStream } from "./run-stream.ts";

/**
 * A node instance's state as a reader sees it. An open instance (CREATED as stored) reads by its
 * task while its run runs: QUEUED, RUNNING, or CREATED for the instant before its task exists. Once
 * its run ended (cancelled, or failed fail-fast) it reads CANCELLING until its task's end is recorded
 * (a running node told to abort; `cancel()` has recorded every other one when it resolves).
 */
export type NodeStatus = Exclude<NodeState, "CREATED"> | "CREATED" | "QUEUED" | "RUNNING" | "CANCELLING";

/** What `cancel()` did: `cancelled` the run (it was running), or nothing (`finished`: it had ended; `status` says how). */
export interface RunCancelOutcome {
  outcome: "cancelled" | "finished";
  status: RunStatus;
}

export interface NodeInstanceStatus extends Instance {
  instance: string;
  status: NodeStatus;
  taskId: string;
  output?: JsonValue;
  error?: JsonValue;
}

export interface GraphRunStatus extends RunSummary {
  /** The graph the run was started with (its nodes, their `next`, fan-outs and joins): what a view draws the run on. */
  definition: Graph;
  /** Every node instance: the graph's nodes in order (each after its predecessors), each node's instances by branch, then iteration. */
  nodes: NodeInstanceStatus[];
}

/**
 * One lifecycle event of a run (its stream): run-started, node-created, node-started, node-finished,
 * node-skipped, run-finished, run-retried. Node events name the node (`node`), its `instance`
 * (`<node>@<branch>#<n>`) and `branch`; node-started has the `taskId` and `attempt`, node-finished
 * and run-finished the `status`.
 */
export interface GraphRunEvent {
  /** The stream entry's id (pass it as `after` to resume). */
  id: string;
  type: "run-started" | "node-created" | "node-started" | "node-finished" | "node-skipped" | "run-finished" | "run-retried";
  ts: number;
  node?: string;
  instance?: string;
  branch?: number[];
  taskId?: string;
  attempt?: number;
  status?: string;
  reason?: string;
  error?: string;
  graph?: string;
  try?: number;
}

const NUMERIC: ReadonlySet<string> = new Set(["ts", "attempt", "try"]);

/**
 * A lifecycle stream entry as events: its node instance (stored as `node`) split into node,
 * instance and branch. An entry for several instances (`nodes`: what one end created) is one event
 * per instance, each with the entry's id.
 */
function runEventsOf(id: string, fields: readonly string[]): GraphRunEvent[] {
  const raw: Record<string, string | number> = {};
  for (let i = 0; i < fields.length; i += 2) raw[fields[i]!] = NUMERIC.has(fields[i]!) ? Number(fields[i + 1]) : fields[i + 1]!;
  const { nodes, ...rest } = raw;
  const instances = typeof nodes === "string" ? nodes.split(",") : [raw.node];
  return instances.map((node) => {
    const event = { ...rest, id } as unknown as GraphRunEvent;
    if (typeof node === "string" && node.includes("@")) {
      const instance = parseInstance(node);
      event.node = instance.node;
      event.instance = node;
      event.branch = instance.branch;
    }
    return event;
  });
}

const TERMINAL: ReadonlySet<string> = new Set(["SUCCEEDED", "FAILED", "CANCELLED"]);
const QUEUED: ReadonlySet<TaskStatus> = new Set(["PENDING", "RETRYING"]);
const compareInstances = (a: Instance, b: Instance): number => {
  for (let i = 0; i < Math.min(a.branch.length, b.branch.length); i++) if (a.branch[i] !== b.branch[i]) return a.branch[i]! - b.branch[i]!;
  return a.branch.length - b.branch.length || a.n - b.n;
};

/** A graph run, from any process: its status, result, lifecycle events, cancel. */
export class GraphRunHandle {
  readonly runId: string;
  private readonly engine: GraphEngine;
  private readonly blocking: () => Redis;
  private readonly source: () => Promise<EventSource>;

  /**
   * @param blocking opens a connection of its own for one stream's blocking reads (closed when the stream ends)
   * @param source what node tasks' event streams are read through (the client's subscriber and status feed)
   */
  constructor(runId: string, engine: GraphEngine, blocking: () => Redis, source: () => Promise<EventSource>) {
    this.runId = runId;
    this.engine = engine;
    this.blocking = blocking;
    this.source = source;
  }

  private async loaded() {
    const run = await this.engine.load(this.runId);
    if (!run) throw new RunNotFoundError(this.runId);
    return run;
  }

  /** The run and every node instance (QUEUED or RUNNING read from its task), with outputs and errors. */
  async status(): Promise<GraphRunStatus> {
    const { compiled } = await this.loaded();
    const engine = this.engine;
    const [[summary], states, outputs] = await Promise.all([
      engine.runs.summaries([this.runId]),
      engine.runs.nodes(this.runId),
      engine.runs.allOutputs(this.runId),
    ]);
    if (!summary) throw new RunNotFoundError(this.runId);
    const nodes: NodeInstanceStatus[] = [...states].map(([key, { state, try: tryNumber }]) => {
      const instance = parseInstance(key);
      const out: NodeInstanceStatus = { ...instance, instance: key, status: state, taskId: engine.taskIdOf(this.runId, compiled, instance, tryNumber) };
      if (outputs[key] !== undefined) out.output = parseJsonOr(outputs[key], null) as JsonValue;
      if (outputs[`!${key}`] !== undefined) out.error = parseJsonOr(outputs[`!${key}`], null) as JsonValue;
      return out;
    });
    // Sorted here: Redis keeps a hash's fields in the order written only while it is small.
    const rank = new Map(compiled.order.map((id, i) => [id, i]));
    nodes.sort((a, b) => (rank.get(a.node) ?? rank.size) - (rank.get(b.node) ?? rank.size) || compareInstances(a, b));
    const open = nodes.filter((n) => n.status === "CREATED");
    if (summary.status !== "RUNNING") {
      // Its run ended: nothing of it starts any more; what is open is being ended.
      for (const n of open) n.status = "CANCELLING";
      return { ...summary, definition: compiled.graph, nodes };
    }
    const tasks = await engine.tasks.getMany(open.map((n) => n.taskId));
    open.forEach((n, i) => {
      const task = tasks[i];
      if (task?.status === "RUNNING") n.status = "RUNNING";
      else if (task && QUEUED.has(task.status)) n.status = "QUEUED";
    });
    return { ...summary, definition: compiled.graph, nodes };
  }

  /**
   * Waits for the run to end. SUCCEEDED: the outputs of its last nodes (those with nothing after
   * them), by node id: one output, or a list in branch order when the node ran more than once.
   * FAILED or CANCELLED: throws a FlotillaError (RUN_FAILED / RUN_CANCELLED) with the run's error.
   */
  async result(options: { timeoutMs?: number } = {}): Promise<Record<string, JsonValue>> {
    // Where the run's events stand, then its status: a run that ends after this is heard on its stream.
    const lastId = await this.engine.runs.lastEventId(this.runId);
    const now = await this.engine.runs.status(this.runId);
    if (now === "RUNNING") {
      for await (const event of this.events({ after: lastId, timeoutMs: options.timeoutMs })) if (event.type === "run-finished") break;
    }
    const record = await this.engine.runs.record(this.runId);
    if (!record) throw new RunNotFoundError(this.runId);
    if (!TERMINAL.has(record.status)) throw new FlotillaError(ErrorCodes.WAIT_TIMEOUT, `graph run ${this.runId} did not end within ${options.timeoutMs} ms`);
    if (record.status === "FAILED")
      throw new FlotillaError(ErrorCodes.RUN_FAILED, record.error?.message ?? "the graph run failed", { details: { run: this.runId, ...record.error } });
    if (record.status === "CANCELLED")
      throw new FlotillaError(ErrorCodes.RUN_CANCELLED, record.error?.message ?? "the graph run was cancelled", { details: { run: this.runId } });
    const { compiled } = await this.loaded();
    const last = new Set([...compiled.nodes].filter(([, c]) => c.next.length === 0).map(([id]) => id));
    const status = await this.status();
    const byNode = new Map<string, NodeInstanceStatus[]>();
    for (const n of status.nodes) {
      if (!last.has(n.node) || n.status !== "EXECUTED") continue;
      byNode.set(n.node, [...(byNode.get(n.node) ?? []), n]);
    }
    const out: Record<string, JsonValue> = {};
    for (const [node, runs] of byNode) {
      runs.sort(compareInstances);
      out[node] = runs.length === 1 && runs[0]!.branch.length === 0 ? (runs[0]!.output ?? null) : runs.map((r) => r.output ?? null);
    }
    return out;
  }

  /**
   * The run's lifecycle events: every one stored, then live ones as they come, with no gap (one
   * stream read from where the last left off); ends after the run's last run-finished (a run retried
   * after it ended goes on), or at `timeoutMs`.
   */
  async *events(options: { after?: string; timeoutMs?: number | undefined } = {}): AsyncGenerator<GraphRunEvent> {
    const key = this.engine.runs.keys.runEvents(this.runId);
    const deadline = options.timeoutMs === undefined ? Number.POSITIVE_INFINITY : Date.now() + options.timeoutMs;
    const last = options.after ?? "0";
    const redis = this.blocking();
    try {
      yield* this.read(redis, key, last, deadline);
    } finally {
      redis.disconnect();
    }
  }

  private async *read(redis: Redis, key: string, after: string, deadline: number): AsyncGenerator<GraphRunEvent> {
    let last = after;
    for (;;) {
      const wait = Math.min(1000, Math.max(1, deadline - Date.now()));
      const reply = (await redis.xread("COUNT", 500, "BLOCK", wait, "STREAMS", key, last)) as Array<[string, Array<[string, string[]]>]> | null;
      for (const [id, fields] of reply?.[0]?.[1] ?? []) {
        last = id;
        for (const event of runEventsOf(id, fields)) {
          yield event;
          // A run retried after it ended goes on: its stream has more after this.
          if (event.type === "run-finished" && (await this.engine.runs.status(this.runId)) !== "RUNNING") return;
        }
      }
      if (Date.now() >= deadline) return;
      if (!reply) {
        // Nothing new: a run that ended before its stream was read to its end has its event stored; one that is gone, none.
        const status = await this.engine.runs.status(this.runId);
        if (status === undefined) return;
      }
    }
  }

  /**
   * Everything the run says: its lifecycle events (as `events()`) and every node task's events
   * (text, tool calls, status…, each tagged with `node`, `instance` and `branch`), replayed and then
   * live with no gap, in arrival order; ends after the run's terminal event and its node tasks' last
   * events. Opened after the run ended, it replays everything.
   */
  async *stream(options: { timeoutMs?: number } = {}): AsyncGenerator<GraphStreamEvent> {
    const stop = new AbortController();
    try {
      yield* mergeRunStream(this.events({ timeoutMs: options.timeoutMs }), this.source, stop.signal);
    } finally {
      stop.abort();
    }
  }

  /**
   * A node instance's checkpoint: the run state it saw (its ancestors' outputs merged, as its task
   * carried it), its output, and the state after it (its output merged in when it is an object).
   */
  async checkpoint(instance: string): Promise<{ instance: string; state: JsonValue; output: JsonValue | undefined; after: JsonValue }> {
    const { compiled, record } = await this.loaded();
    const parsed = parseInstance(instance);
    if (!compiled.nodes.has(parsed.node)) throw new FlotillaError(ErrorCodes.VALIDATION, `graph run ${this.runId} has no node ${parsed.node}`);
    const { state } = (await resolveInstances(this.engine.runs, this.runId, compiled, record.input, [parsed]))[0]!;
    const [text] = await this.engine.runs.outputs(this.runId, [instance]);
    const output = text === null || text === undefined ? undefined : (parseJsonOr(text, null) as JsonValue);
    const isObject = (v: JsonValue | undefined): v is Record<string, JsonValue> => v !== null && typeof v === "object" && !Array.isArray(v);
    const after = isObject(output) && isObject(state) ? { ...state, ...output } : state;
    return { instance, state, output, after };
  }

  /**
   * Resumes a FAILED or CANCELLED run after a fix: its failed, cancelled and unfinished nodes run
   * again (as new tasks); every node that succeeded keeps its output. Resolves with this handle.
   * Refused for a run that is RUNNING or SUCCEEDED: RunNotRetryableError (a ValidationError, code
   * VALIDATION_ERROR, with the run's `status`); RunNotFoundError (RUN_NOT_FOUND) for no such run.
   */
  async retry(): Promise<this> {
    const { outcome, status } = await this.engine.retry(this.runId);
    if (outcome === "missing") throw new RunNotFoundError(this.runId);
    if (outcome === "refused") throw new RunNotRetryableError(this.runId, status ?? "RUNNING");
    return this;
  }

  /**
   * Cancels the run: no node starts afterwards, running ones are aborted. When it resolves every
   * node instance reads a final state, or CANCELLING for a running node until its worker records its
   * end. On a run that had ended it changes nothing (`finished`, with its status). RunNotFoundError
   * (RUN_NOT_FOUND) for no such run.
   */
  async cancel(reason = "cancelled by request"): Promise<RunCancelOutcome> {
    const { outcome, status } = await this.engine.cancel(this.runId, reason);
    if (outcome === "missing" || status === undefined) throw new RunNotFoundError(this.runId);
    return { outcome, status };
  }
}
