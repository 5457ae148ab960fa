import { requestCancel } from "@flotilla/cancel";
import { DEFAULT_RETENTION, ErrorCodes, type JsonValue, type Keys, type Logger, laneOfPriority, parseJsonOr, silentLogger, splitTaskId } from "@flotilla/core";
import { clearHandoffs, inputPreviewOf, type NewTask, readHandoffs, TaskStore } from "@flotilla/store";
import type { Redis } from "ioredis";
import { type CompiledGraph, compileGraph } from "./compile.ts";
import { type Graph, GraphSchema } from "./definition.ts";
import { type Instance, instanceKey, instanceOfTaskName, parseInstance, taskNameOf } from "./instances.ts";
import { type Resolved, resolveInstances } from "./resolver.ts";
import { type RunOptions, type RunRecord, type RunStatus, RunStore } from "./run-store.ts";

/** A run as the engine keeps it in memory: its graph compiled once (a run's graph never changes). */
export interface LoadedRun {
  record: RunRecord;
  compiled: CompiledGraph;
}

/** What a node task's result holds: the node's output and the next nodes it chose. */
export interface NodeResult {
  output: JsonValue;
  next?: string[];
}

const CACHE_MAX = 1000;
/** Node tasks created per create-8.lua call at most (as submitMany chunks). */
const CREATE_BATCH = 500;
/** Ends of one run recorded per advance-5.lua call at most, and their outputs' size: the call's arguments carry them. */
const ADVANCE_BATCH = 100;
const ADVANCE_BATCH_CHARS = 1_048_576;

/** `items` in order, in chunks of at most ADVANCE_BATCH items and about ADVANCE_BATCH_CHARS of `size` (one item at least). */
function chunks<T>(items: readonly T[], size: (item: T) => number): T[][] {
  const out: T[][] = [];
  let chunk: T[] = [];
  let chars = 0;
  for (const item of items) {
    if (chunk.length > 0 && (chunk.length >= ADVANCE_BATCH || chars + size(item) > ADVANCE_BATCH_CHARS)) {
      out.push(chunk);
      chunk = [];
      chars = 0;
    }
    chunk.push(item);
    chars += size(item);
  }
  if (chunk.length > 0) out.push(chunk);
  return out;
}

/** A node task's end to hand on to its run: `known` is the end as the worker that ran it knows it (else its record is read). */
export interface HandOff {
  taskId: string;
  known?: NodeEnd | undefined;
}

type TaskRef = NonNullable<ReturnType<typeof instanceOfTaskName>>;
/** A node task's end on its way to its run (undefined: the task's record is gone). */
interface NodeTaskEnd {
  taskId: string;
  queue: string;
  ref: TaskRef;
  end: NodeEnd | undefined;
}

const addTo = <K, V>(map: Map<K, V[]>, key: K, value: V): void => {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
};

/**
 * Moves graph runs forward in Redis: starts them, and hands each node task's end on to its run
 * (advance-5.lua in the run's slot, then the successors' tasks through the normal create script,
 * with names that make a second create a no-op, then the hand-off cleared in the task's queue).
 * Every step can be done again: a process killed between any two of them leaves work that any
 * other one finishes (`sweep`). There is no orchestrator process.
 */
export class GraphEngine {
  readonly runs: RunStore;
  readonly tasks: TaskStore;
  private readonly redis: Redis;
  private readonly keys: Keys;
  private readonly log: Logger;
  private readonly cache = new Map<string, LoadedRun>();

  /** Told when a hand-off ended a run (its record as loaded, the status it ended with and when, on Redis's clock). */
  onRunEnded: ((run: RunRecord, status: "SUCCEEDED" | "FAILED" | "CANCELLED", endedAt: number) => void) | undefined;

  /** `signingSecret`: the node tasks it creates are signed with it (signed tasks: see @flotilla/store). */
  constructor(redis: Redis, keys: Keys, log: Logger = silentLogger, options: { signingSecret?: string | undefined } = {}) {
    this.redis = redis;
    this.keys = keys;
    this.log = log;
    this.runs = new RunStore(redis, keys);
    this.tasks = new TaskStore(redis, keys, DEFAULT_RETENTION, {}, { signingSecret: options.signingSecret });
  }

  /** The task id of an instance of a run, in the run's try `tryNumber` (0 before any retry). */
  taskIdOf(runId: string, compiled: CompiledGraph, instance: Instance, tryNumber = 0): string {
    return `${compiled.nodes.get(instance.node)!.queue}/${taskNameOf(runId, instance, tryNumber)}`;
  }

  /** A run's record and compiled graph (cached: both but the status never change); undefined when there is no such run. */
  async load(runId: string): Promise<LoadedRun | undefined> {
    const cached = this.cache.get(runId);
    if (cached) return cached;
    const record = await this.runs.record(runId);
    if (!record) return undefined;
    const graph = GraphSchema.parse(parseJsonOr(record.graph, {})) as Graph;
    const loaded = { record, compiled: compileGraph(graph) };
    if (this.cache.size >= CACHE_MAX) this.cache.delete(this.cache.keys().next().value!);
    this.cache.set(runId, loaded);
    return loaded;
  }

  /**
   * Starts a run: noted in the starting set (so a sweeper finishes it if this process dies), its
   * record and first instances written, their tasks created, the note cleared.
   */
  async start(runId: string, compiled: CompiledGraph, input: JsonValue, options: RunOptions): Promise<{ started: boolean }> {
    const now = Date.now();
    await this.redis.multi().zadd(this.keys.graphStarting(), now, runId).zadd(this.keys.graphRuns(), "NX", now, runId).exec();
    const graphJson = JSON.stringify(compiled.graph);
    const { started, created } = await this.runs.start(runId, compiled, graphJson, input, options);
    if (started)
      this.cache.set(runId, {
        record: {
          runId,
          graphName: compiled.graph.name,
          status: "RUNNING",
          createdAt: now,
          endedAt: undefined,
          error: undefined,
          input,
          graph: graphJson,
          options,
          open: created.length,
        },
        compiled,
      });
    await this.createTasks(runId, created);
    await this.redis.zrem(this.keys.graphStarting(), runId);
    return { started };
  }

  /** Creates the tasks of a run's new instances (a task that exists is left as it is), per queue in one call each. */
  async createTasks(runId: string, instances: readonly string[]): Promise<void> {
    if (instances.length === 0) return;
    const run = await this.load(runId);
    if (!run) return;
    const { compiled, record } = run;
    const byQueue = new Map<string, NewTask[]>();
    const tries = await this.runs.tries(runId, instances);
    const parsed = instances.map(parseInstance);
    // A unites node's inputs are lists of its branches' outputs: its worker reads them from the run.
    const resolving = parsed.filter((i) => !compiled.nodes.get(i.node)!.node.unites);
    const resolved = await resolveInstances(this.runs, runId, compiled, record.input, resolving);
    const resolvedOf = new Map<Instance, Resolved>(resolving.map((i, k) => [i, resolved[k]!]));
    for (const [i, key] of instances.entries()) {
      const instance = parsed[i]!;
      const c = compiled.nodes.get(instance.node)!;
      const n = c.node;
      const { input, state } = resolvedOf.get(instance) ?? { input: null, state: null };
      const choosing = n.router !== undefined || n.next.length > 1;
      const payload = {
        node: {
          run: runId,
          id: n.id,
          type: n.type,
          instance: key,
          ...(n.fanOut && { fanOut: compiled.graph.maxFanOut }),
          ...(choosing && { next: n.next }),
          ...(n.router && { router: n.router }),
          // What the worker reads (its join and policy): a task stays readable by workers of any version.
          ...(n.unites && { unites: { id: n.unites.id, policy: n.unites.policy } }),
        },
        input,
        state,
      };
      const task: NewTask = {
        taskId: `${c.queue}/${taskNameOf(runId, instance, tries[i])}`,
        queue: c.queue,
        agent: n.type,
        payload: JSON.stringify(payload),
        inputPreview: inputPreviewOf(input),
        detailed: record.options.detailed,
        maxRetries: n.retry?.maxRetries ?? 0,
        backoff: n.retry?.backoff,
        maxDeliveries: n.retry?.maxDeliveries,
        timeoutMs: n.timeoutMs,
        priority: n.priority === undefined ? undefined : typeof n.priority === "number" ? laneOfPriority(n.priority) : n.priority,
        metadata: { ...record.options.metadata, graphRun: runId, graphNode: key },
        // The same on every create of this instance: a second create is taken for a resend, not a clash.
        submitId: runId,
        handoff: true,
        trace: record.options.trace,
      };
      const list = byQueue.get(c.queue) ?? [];
      list.push(task);
      byQueue.set(c.queue, list);
    }
    for (const [queue, tasks] of byQueue) {
      // At most CREATE_BATCH a call: a wide fan-out does not hold Redis in one long script.
      for (let from = 0; from < tasks.length; from += CREATE_BATCH) {
        const { lanesMade } = await this.tasks.createMany(queue, tasks.slice(from, from + CREATE_BATCH));
        if (lanesMade) await this.tasks.registerQueue(queue);
      }
    }
    // A run that ended between its advance and these creates: its close (closeOpen) found these
    // names closed or their tasks, so they never run; this covers a close cut short by a crash.
    if ((await this.runs.status(runId)) !== "RUNNING") await this.closeOpen(runId, "the graph run ended");
  }

  /** Hands one node task's end on to its run (see handOffMany). */
  handOff(taskId: string, known?: NodeEnd): Promise<void> {
    return this.handOffMany([{ taskId, known }]);
  }

  /**
   * Hands node tasks' ends on to their runs: each run's ends recorded in one advance call (per
   * ADVANCE_BATCH), their successors' tasks created, the hand-offs cleared. Safe to call again, from
   * any process, for the same tasks. An end not `known` (as the worker that ran it knows it) is
   * read from its task's record.
   */
  async handOffMany(handOffs: readonly HandOff[]): Promise<void> {
    const ends: NodeTaskEnd[] = [];
    const clear = new Map<string, string[]>();
    const unknown: Array<{ taskId: string; queue: string; ref: TaskRef }> = [];
    for (const { taskId, known } of handOffs) {
      const { queue, name } = splitTaskId(taskId);
      const ref = instanceOfTaskName(name);
      if (!ref) addTo(clear, queue, taskId);
      else if (known) ends.push({ taskId, queue, ref, end: known });
      else unknown.push({ taskId, queue, ref });
    }
    const records = unknown.length > 0 ? await this.tasks.getMany(unknown.map((u) => u.taskId)) : [];
    for (const [i, u] of unknown.entries()) {
      const task = records[i];
      if (task && task.status !== "COMPLETED" && task.status !== "FAILED" && task.status !== "CANCELLED") continue; // runs again (a re-queued dead letter)
      ends.push({ ...u, end: task && { status: task.status as NodeEnd["status"], result: task.result as NodeResult | undefined, error: task.error } });
    }
    const byRun = new Map<string, NodeTaskEnd[]>();
    for (const e of ends) addTo(byRun, e.ref.runId, e);
    await Promise.all([...byRun].map(([runId, runEnds]) => this.advanceRun(runId, runEnds)));
    for (const e of ends) addTo(clear, e.queue, e.taskId);
    await Promise.all([...clear].map(([queue, taskIds]) => clearHandoffs(this.redis, this.keys, queue, taskIds)));
  }

  private async advanceRun(runId: string, ends: readonly NodeTaskEnd[]): Promise<void> {
    const run = await this.load(runId);
    if (!run) return;
    for (const chunk of chunks(
      ends.map(({ ref, end }) => ({ instance: instanceKey(ref.instance), try: ref.try, ...endOf(end) })),
      (e) => (e.output?.length ?? 0) + (e.error?.length ?? 0),
    )) {
      const { status, endedRun, replies } = await this.runs.advance(runId, chunk, run.record.options.ttlMs);
      await this.createTasks(
        runId,
        replies.flatMap((r) => (r.reply === "ok" || r.reply === "replay" ? r.created : [])),
      );
      // The end that ended the run closes what it left open; so does its replay (the first try may
      // have died before closing). The late ends of an ended run ('ended') have nothing to close.
      if ((status === "FAILED" || status === "CANCELLED") && (endedRun || replies.some((r) => r.reply === "replay"))) {
        await this.closeOpen(runId, "the graph run ended");
      }
      if (status !== "RUNNING") {
        this.cache.delete(runId);
        if (endedRun && this.onRunEnded) {
          const ended = await this.runs.record(runId);
          if (ended?.endedAt !== undefined) this.onRunEnded(run.record, status as "SUCCEEDED" | "FAILED" | "CANCELLED", ended.endedAt);
        }
        return;
      }
    }
  }

  /**
   * Cancels a run: it ends CANCELLED, and its open instances are closed (see closeOpen) before this
   * resolves. On a run that had ended it changes nothing but closes what is still open (`finished`).
   */
  async cancel(runId: string, reason = "cancelled by request"): Promise<{ outcome: "cancelled" | "finished" | "missing"; status: RunStatus | undefined }> {
    const run = await this.load(runId);
    const { outcome, status, open, tries } = await this.runs.cancel(runId, reason, run?.record.options.ttlMs ?? 86_400_000);
    this.cache.delete(runId);
    if (outcome !== "missing") await this.close(runId, open, tries, reason);
    return { outcome, status: status || undefined };
  }

  /**
   * Resumes a FAILED or CANCELLED run from its failed, cancelled and unfinished nodes (new tasks,
   * under the run's next try); every node that succeeded keeps its output and is not run again.
   * `refused` (with the run's status) for a run that is RUNNING or SUCCEEDED.
   */
  async retry(runId: string): Promise<{ outcome: "retried" | "refused" | "missing"; status: RunStatus | undefined }> {
    const { outcome, status, instances } = await this.runs.retry(runId);
    this.cache.delete(runId);
    if (outcome === "retried") await this.createTasks(runId, instances);
    return { outcome, status: (status || undefined) as RunStatus | undefined };
  }

  /** Closes the open instances of a run that ended (see close), as read now. */
  private async closeOpen(runId: string, reason: string): Promise<void> {
    const open = [...(await this.runs.nodes(runId))].filter(([, n]) => n.state === "CREATED");
    await this.close(
      runId,
      open.map(([k]) => k),
      open.map(([, n]) => n.try),
      reason,
    );
  }

  /**
   * Ends the open instances of a run that ended, each by its task, and records what can be known
   * now, so that a reader sees a final state once this resolves: a waiting task ends CANCELLED at
   * once; a task yet to be created has its name closed (closeTask-1.lua: the create that comes
   * later is a no-op, so it never runs); a task that had ended hands its own end on. A running task
   * is told to abort; its worker records its end (until then its instance reads CANCELLING).
   */
  private async close(runId: string, instances: readonly string[], tries: readonly number[], reason: string): Promise<void> {
    if (instances.length === 0) return;
    const run = await this.load(runId);
    if (!run) return;
    const cancel = (taskId: string) => requestCancel(this.redis, this.keys, DEFAULT_RETENTION, taskId, reason);
    const cancelled: NodeEnd = { status: "CANCELLED", error: { message: reason, code: ErrorCodes.CANCELLED } };
    const ends = await Promise.all(
      instances.map(async (key, i): Promise<HandOff | undefined> => {
        const instance = parseInstance(key);
        const taskId = this.taskIdOf(runId, run.compiled, instance, tries[i]);
        let { outcome } = await cancel(taskId);
        if (outcome === "missing") {
          const n = run.compiled.nodes.get(instance.node)!;
          const closing = {
            taskId,
            queue: n.queue,
            agent: n.node.type,
            submitId: runId,
            metadata: { ...run.record.options.metadata, graphRun: runId, graphNode: key },
          };
          if ((await this.runs.closeTask(closing, reason, DEFAULT_RETENTION.keepCompleted.ageMs)) === "closed") return { taskId, known: cancelled };
          // Created in between: it exists now.
          ({ outcome } = await cancel(taskId));
        }
        if (outcome === "cancelled") return { taskId, known: cancelled };
        if (outcome === "finished") return { taskId };
        return undefined;
      }),
    );
    await this.handOffMany(ends.filter((e): e is HandOff => e !== undefined));
  }

  /**
   * Finishes what crashed processes left: hand-offs of `queues` older than `graceMs`, and starts
   * older than `graceMs` whose process died before their first tasks existed. Returns how many it finished.
   */
  async sweep(queues: readonly string[], graceMs: number, limit = 100): Promise<number> {
    const before = Date.now() - graceMs;
    let done = 0;
    for (const queue of queues) {
      const found = await readHandoffs(this.redis, this.keys, queue, before, limit);
      await this.handOffMany(found.map(({ taskId }) => ({ taskId })));
      done += found.length;
    }
    const starting = await this.redis.zrangebyscore(this.keys.graphStarting(), "-inf", before, "LIMIT", 0, limit);
    for (const runId of starting) {
      const run = await this.load(runId);
      if (run) {
        const created = [...(await this.runs.nodes(runId))].filter(([k, n]) => n.state === "CREATED" && parseInstance(k).branch.length === 0).map(([k]) => k);
        await this.createTasks(runId, created);
      }
      await this.redis.zrem(this.keys.graphStarting(), runId);
      this.log.info("graph run start finished by the sweeper", { runId, found: run !== undefined });
      done++;
    }
    return done;
  }
}

/** How a node task ended, as its record (or the worker that ran it) says. */
export interface NodeEnd {
  status: "COMPLETED" | "FAILED" | "CANCELLED";
  result?: NodeResult | undefined;
  error?: { message: string; code: string } | undefined;
}

/** A node task's end as its run records it (undefined: its record is gone). */
function endOf(end: NodeEnd | undefined): {
  outcome: "EXECUTED" | "ERRORED" | "CANCELLED";
  output?: string;
  error?: string;
  width?: number;
  chosen?: string[];
} {
  if (!end) return { outcome: "ERRORED", error: JSON.stringify({ message: "the node's task record is gone", code: "TASK_NOT_FOUND" }) };
  if (end.status === "CANCELLED") return { outcome: "CANCELLED", error: JSON.stringify(end.error ?? { message: "cancelled", code: "CANCELLED" }) };
  if (end.status === "FAILED") return { outcome: "ERRORED", error: JSON.stringify(end.error ?? { message: "failed", code: "TASK_FAILED" }) };
  const output = end.result?.output ?? null;
  return {
    outcome: "EXECUTED",
    output: JSON.stringify(output),
    ...(Array.isArray(output) && { width: output.length }),
    ...(end.result?.next && { chosen: end.result.next }),
  };
}
