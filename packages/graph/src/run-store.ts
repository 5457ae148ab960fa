import { type JsonValue, type Keys, parseJsonOr } from "@flotilla/core";
import { pipelineBySlot } from "@flotilla/core/redis";
import type { Redis } from "ioredis";
import type { CompiledGraph } from "./compile.ts";
import { scripts } from "./scripts.ts";

export type RunStatus = "RUNNING" | "SUCCEEDED" | "FAILED" | "CANCELLED";
export type NodeState = "CREATED" | "EXECUTED" | "ERRORED" | "CANCELLED" | "SKIPPED";

/** What a run is started with, kept on its record. */
export interface RunOptions {
  /** The run's keys expire this long after it ends. */
  ttlMs: number;
  /** Node tasks keep every event type (text deltas included). */
  detailed: boolean;
  /** Metadata put on every node task. */
  metadata: Record<string, JsonValue>;
  /** W3C trace context of the start (JSON carrier): every node task continues it, so a run is one trace. */
  trace?: string | undefined;
}

/**
 * Why a run failed or was cancelled: the instance whose end decided it (`node`) and that node's own
 * error (`cause`). A run that failed by its nodes' failures also counts them (`failures`) and lists
 * the failed instances (`failed`, the first 100): under `onBranchFailure: "finish-running"` every
 * branch that failed while the others ran to their end.
 */
export interface RunError {
  message: string;
  code: string;
  node?: string;
  cause?: { message: string; code: string };
  failures?: number;
  failed?: string[];
}

/** A run's record as stored. */
export interface RunRecord {
  runId: string;
  graphName: string;
  status: RunStatus;
  createdAt: number;
  endedAt: number | undefined;
  /** Why it failed or was cancelled (see RunError). */
  error: RunError | undefined;
  input: JsonValue;
  /** The graph as started (JSON). */
  graph: string;
  options: RunOptions;
  /** Node instances not yet ended. */
  open: number;
}

/** A run as listings show it. */
export interface RunSummary {
  runId: string;
  graph: string;
  status: RunStatus;
  createdAt: number;
  endedAt: number | undefined;
  error: RunRecord["error"];
}

/** An instance's end, as advance-5.lua records it. */
export interface InstanceEnd {
  instance: string;
  outcome: "EXECUTED" | "ERRORED" | "CANCELLED";
  output?: string | undefined;
  error?: string | undefined;
  width?: number | undefined;
  chosen?: readonly string[] | undefined;
  /** The run's try the ended task was created in (0 before any retry). */
  try?: number | undefined;
}

/** What advance-5.lua answered for one end. */
export interface AdvanceReply {
  reply: "ok" | "replay" | "stale" | "ended" | "unknown" | "missing";
  created: string[];
}

/** What advance-5.lua answered for a call: the run's status after it, whether it ended the run, and each end's reply. */
export interface AdvanceResult {
  status: RunStatus | "";
  endedRun: boolean;
  replies: AdvanceReply[];
}

/** Lifecycle events kept per run (approximate). */
const EVENTS_MAX_LEN = 100_000;
const RECORD_FIELDS = ["runId", "graphName", "status", "createdAt", "endedAt", "error", "input", "graph", "options", "open"] as const;

const list = (csv: string | undefined): string[] => (csv ? csv.split(",") : []);

/**
 * A graph run's keys, one slot per run (the run id is their hash tag): its record, node instances,
 * outputs, join counters and lifecycle events. Every change is one script call; the reads here are
 * what the engine, the run handle and the worker's resolver need.
 */
export class RunStore {
  readonly redis: Redis;
  readonly keys: Keys;

  constructor(redis: Redis, keys: Keys) {
    this.redis = redis;
    this.keys = keys;
    for (const s of Object.values(scripts)) s.install(redis);
  }

  private runKeys(runId: string): string[] {
    const k = this.keys;
    return [k.run(runId), k.runNodes(runId), k.runOutputs(runId), k.runJoins(runId), k.runEvents(runId)];
  }

  /** Creates the run and its first nodes' instances; on a run that exists, changes nothing and returns its first instances. */
  async start(
    runId: string,
    compiled: CompiledGraph,
    graphJson: string,
    input: JsonValue,
    options: RunOptions,
  ): Promise<{ started: boolean; status: RunStatus; created: string[] }> {
    const [outcome, status, created] = (await scripts.startRun.run(this.redis, this.runKeys(runId), [
      "",
      runId,
      compiled.graph.name,
      graphJson,
      compiled.topology,
      JSON.stringify(input),
      JSON.stringify(options),
      compiled.roots.join(","),
      EVENTS_MAX_LEN,
    ])) as [string, RunStatus, string];
    return { started: outcome === "started", status, created: list(created) };
  }

  /** Records some instances' ends, in order, and creates what becomes ready (see advance-5.lua): one call. */
  async advance(runId: string, ends: readonly InstanceEnd[], ttlMs: number): Promise<AdvanceResult> {
    const args: Array<string | number> = ["", ttlMs, EVENTS_MAX_LEN];
    for (const e of ends) {
      args.push(e.instance, e.outcome, e.output ?? "", e.error ?? "", e.width ?? "", e.chosen ? e.chosen.join(",") : "*", e.try ?? 0);
    }
    const [status, endedRun, ...each] = (await scripts.advance.run(this.redis, this.runKeys(runId), args)) as [RunStatus | "missing", number, ...string[]];
    if (status === "missing") return { status: "", endedRun: false, replies: ends.map(() => ({ reply: "missing", created: [] })) };
    const replies: AdvanceReply[] = [];
    for (let i = 0; i < each.length; i += 2) replies.push({ reply: each[i] as AdvanceReply["reply"], created: list(each[i + 1]) });
    return { status, endedRun: endedRun === 1, replies };
  }

  /**
   * Ends a running run CANCELLED; returns the instances still open and the try of each one's task,
   * read in the same step (their tasks are the caller's to end). A run that had ended is left as it
   * is (`finished`), its open instances returned all the same.
   */
  async cancel(
    runId: string,
    reason: string,
    ttlMs: number,
  ): Promise<{ outcome: "cancelled" | "finished" | "missing"; status: RunStatus | ""; open: string[]; tries: number[] }> {
    const [outcome, status, open, tries] = (await scripts.cancelRun.run(this.redis, this.runKeys(runId), ["", reason, ttlMs, EVENTS_MAX_LEN])) as [
      "cancelled" | "finished" | "missing",
      RunStatus | "",
      string,
      string,
    ];
    return { outcome, status, open: list(open), tries: list(tries).map(Number) };
  }

  /**
   * Closes a node task's name before its task exists (see closeTask-1.lua): a CANCELLED record in
   * its place, so that a later create of it is a no-op. `exists`: the task exists, nothing written.
   */
  async closeTask(
    task: { taskId: string; queue: string; agent: string; submitId: string; metadata: Record<string, JsonValue> },
    reason: string,
    ttlMs: number,
  ): Promise<"closed" | "exists"> {
    return (await scripts.closeTask.run(
      this.redis,
      [this.keys.task(task.taskId)],
      [task.taskId, task.queue, task.agent, task.submitId, reason, JSON.stringify(task.metadata), ttlMs, ""],
    )) as "closed" | "exists";
  }

  async record(runId: string): Promise<RunRecord | undefined> {
    const v = await this.redis.hmget(this.keys.run(runId), ...RECORD_FIELDS);
    if (v[2] === null) return undefined;
    return {
      runId: v[0] ?? runId,
      graphName: v[1] ?? "graph",
      status: v[2] as RunStatus,
      createdAt: Number(v[3]),
      endedAt: v[4] === null ? undefined : Number(v[4]),
      error: parseJsonOr(v[5] ?? undefined, undefined) as RunRecord["error"],
      input: parseJsonOr(v[6] ?? undefined, null) as JsonValue,
      graph: v[7] ?? "{}",
      options: parseJsonOr(v[8] ?? undefined, { ttlMs: 86_400_000, detailed: true, metadata: {} }) as RunOptions,
      open: Number(v[9] ?? 0),
    };
  }

  /** The records of some runs (their small fields), read per slot; undefined for a run that is gone. */
  async summaries(runIds: readonly string[]): Promise<Array<RunSummary | undefined>> {
    const replies = await pipelineBySlot(
      this.redis,
      runIds.map((id) => this.keys.run(id)),
      (pipeline, key) => pipeline.hmget(key, "graphName", "status", "createdAt", "endedAt", "error"),
    );
    return replies.map(([err, values], i) => {
      if (err) throw err;
      const [graph, status, createdAt, endedAt, error] = values as Array<string | null>;
      if (status === null || status === undefined) return undefined;
      return {
        runId: runIds[i]!,
        graph: graph ?? "graph",
        status: status as RunStatus,
        createdAt: Number(createdAt),
        endedAt: endedAt ? Number(endedAt) : undefined,
        error: parseJsonOr(error ?? undefined, undefined) as RunRecord["error"],
      };
    });
  }

  async status(runId: string): Promise<RunStatus | undefined> {
    return ((await this.redis.hget(this.keys.run(runId), "status")) ?? undefined) as RunStatus | undefined;
  }

  /** Every instance of the run: its state, and the try of the run its current task belongs to (0 before any retry). */
  async nodes(runId: string): Promise<Map<string, { state: NodeState; try: number }>> {
    const all = await this.redis.hgetall(this.keys.runNodes(runId));
    const out = new Map<string, { state: NodeState; try: number }>();
    for (const [k, v] of Object.entries(all)) {
      if (!k.endsWith(">") && !k.endsWith("~")) out.set(k, { state: v as NodeState, try: Number(all[`${k}~`] ?? 0) });
    }
    return out;
  }

  /** The try each instance's current task belongs to (0 before any retry). */
  async tries(runId: string, instances: readonly string[]): Promise<number[]> {
    if (instances.length === 0) return [];
    return (await this.redis.hmget(this.keys.runNodes(runId), ...instances.map((i) => `${i}~`))).map((v) => Number(v ?? 0));
  }

  /** Resumes a FAILED or CANCELLED run (see retryRun-5.lua): the instances to create again, under the new try. */
  async retry(runId: string): Promise<{ outcome: "retried" | "refused" | "missing"; status: string; instances: string[] }> {
    const reply = (await scripts.retryRun.run(this.redis, this.runKeys(runId), ["", EVENTS_MAX_LEN])) as string[];
    if (reply[0] === "retried") return { outcome: "retried", status: "RUNNING", instances: list(reply[2]) };
    return { outcome: reply[0] as "refused" | "missing", status: reply[1] ?? "", instances: [] };
  }

  /** Outputs (or, for `!<instance>`, errors) of some instances, as stored (JSON text or null). */
  outputs(runId: string, fields: readonly string[]): Promise<Array<string | null>> {
    return fields.length === 0 ? Promise.resolve([]) : this.redis.hmget(this.keys.runOutputs(runId), ...fields);
  }

  /** Every output and error of the run: instance → JSON text (errors under `!<instance>`). */
  allOutputs(runId: string): Promise<Record<string, string>> {
    return this.redis.hgetall(this.keys.runOutputs(runId));
  }

  /** Join fields (`w:<node>@<branch>` widths, `n:<node>@<branch>` run counts) as numbers (0 when absent). */
  async counters(runId: string, fields: readonly string[]): Promise<number[]> {
    if (fields.length === 0) return [];
    return (await this.redis.hmget(this.keys.runJoins(runId), ...fields)).map((v) => Number(v ?? 0));
  }

  /** The id of the run's latest lifecycle event ("0" when it has none). */
  async lastEventId(runId: string): Promise<string> {
    const [latest] = (await this.redis.xrevrange(this.keys.runEvents(runId), "+", "-", "COUNT", 1)) as Array<[string, string[]]>;
    return latest?.[0] ?? "0";
  }

  /** Notes on the run's stream that a node's task started an attempt (written by the worker that runs it). */
  async nodeStarted(runId: string, instance: string, taskId: string, attempt: number): Promise<void> {
    await this.redis.xadd(
      this.keys.runEvents(runId),
      "MAXLEN",
      "~",
      EVENTS_MAX_LEN,
      "*",
      "type",
      "node-started",
      "ts",
      Date.now(),
      "node",
      instance,
      "taskId",
      taskId,
      "attempt",
      attempt,
    );
  }
}
