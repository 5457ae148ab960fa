import {
  type AgentSpecInput,
  checkJson,
  checkJsonDepth,
  type JsonValue,
  JsonValueSchema,
  newId,
  parseInput,
  type ResolvedSubmitOptions,
  type RunnableSpec,
  RunnableSpecSchema,
  type Serializable,
  type SubmitOptions,
  SubmitOptionsSchema,
  type SwarmSpecInput,
  splitTaskId,
  taskIdOf,
  ValidationError,
} from "@flotilla/core";
import { inputPreviewOf, type NewTask } from "@flotilla/store";

/**
 * Anything `submit` accepts as an agent: an object with `toJSON()` (Agent, Swarm) or its plain JSON,
 * defaults left out (`{ name, model }`: a worker that registers the agent runs its own definition).
 */
export type AgentLike = Serializable | AgentSpecInput | SwarmSpecInput;

/** A submit checked and ready to write: every field validated, the id, payload and start time decided. */
export interface Submission {
  taskId: string;
  agent: RunnableSpec;
  /** JSON of `{ agent, input }`. */
  payload: string;
  /** What task lists show of the input (inputPreviewOf); undefined for none. */
  inputPreview: string | undefined;
  /** When it was submitted (ms). */
  createdAt: number;
  /** When a delayed task falls due (ms). */
  runAt: number | undefined;
  options: ResolvedSubmitOptions;
}

/** The limits and per-queue defaults of a submit (the client's options of the same names). */
export interface SubmissionLimits {
  maxPayloadBytes: number;
  maxJsonDepth: number;
  /** The concurrency limit of a queue's tasks that give a `concurrencyKey` and no `concurrencyLimit` (else 1). */
  concurrencyLimits?: Readonly<Record<string, number>> | undefined;
  /** Characters of the input kept on the record for task lists; 0: none. @default INPUT_PREVIEW_CHARS (100) */
  inputPreviewChars?: number | undefined;
}

/** Options users give a submit that belong elsewhere, and where (the error says so instead of "unknown key"). */
const MISPLACED_SUBMIT_OPTIONS: Readonly<Record<string, string>> = {
  rateLimit: "a rate limit is the agent's, not a submit's: new Agent({ rateLimit: \"<name>\" }), drawing from a limit the workers define (rateLimits)",
  concurrency: "a worker's concurrency is set on the worker; a submit takes concurrencyKey (and concurrencyLimit) to bound tasks of one key",
  retries: "a submit's retries are maxRetries (and backoff)",
  timeout: "a submit's timeout is timeoutMs",
  delay: "a submit's delay is delayMs (or runAt)",
};

/**
 * Validates one submit and prepares what is written, with no I/O: `submit` and `submitMany` both go
 * through here, so they accept and refuse the same things with the same messages. A bad field is a
 * ValidationError naming it; so is a circular reference anywhere in the agent, options or input,
 * anything JSON cannot carry in the input or the metadata (named by its path from `input` or
 * `metadata`, and why: a BigInt, a Date, NaN, undefined, ...), and nesting deeper than
 * `maxJsonDepth` (checked first: every later check recurses per level).
 */
export function prepareSubmission(agent: AgentLike, input: JsonValue, options: SubmitOptions, limits: SubmissionLimits, now: number): Submission {
  const { maxPayloadBytes, maxJsonDepth } = limits;
  const { spec, json: specJson } = checkedSpec(agent, maxJsonDepth);
  const metadata = (options as { metadata?: unknown } | null | undefined)?.metadata;
  checkJsonDepth(metadata, maxJsonDepth, "metadata");
  // The rest of the options (metadata is one level down in them): a backstop for fields zod refuses.
  checkJsonDepth(options, maxJsonDepth + 1, "options");
  checkJsonDepth(input, maxJsonDepth, "input");
  // Options hold non-JSON on purpose (`runAt` takes a Date): zod names their fields; metadata is JSON.
  checkJson(options, "options", { root: "", only: "cycles" });
  if (metadata !== undefined) checkJson(metadata, "options", { root: "metadata" });
  checkJson(input, "input");
  const opts = parseInput(SubmitOptionsSchema, options, "options", MISPLACED_SUBMIT_OPTIONS);
  const value = parseInput(JsonValueSchema, input, "input");
  // The JSON of { agent: spec, input }, the spec's part made once per agent.
  const inputJson = JSON.stringify(value);
  const payload = `{"agent":${specJson},"input":${inputJson}}`;
  const bytes = Buffer.byteLength(payload);
  if (bytes > maxPayloadBytes) throw ValidationError.of("input", "input", `payload is ${bytes} bytes; the limit is ${maxPayloadBytes}`);
  if (opts.concurrencyKey !== undefined && opts.concurrencyLimit === undefined) opts.concurrencyLimit = limits.concurrencyLimits?.[opts.queue];
  const runAt = opts.runAt ?? (opts.delayMs === undefined ? undefined : now + opts.delayMs);
  const inputPreview = inputPreviewOf(value, limits.inputPreviewChars, inputJson);
  return { taskId: taskIdOf(opts.queue, nameFor(opts)), agent: spec, payload, inputPreview, createdAt: now, runAt, options: opts };
}

/** The task's name in its queue: the caller's `taskId` (a name, or `<queue>/<name>` of this queue), else a new id. */
function nameFor(opts: ResolvedSubmitOptions): string {
  if (opts.taskId === undefined) return newId();
  if (!opts.taskId.includes("/")) return opts.taskId;
  const { queue, name } = splitTaskId(opts.taskId);
  if (queue !== opts.queue) {
    throw ValidationError.of("options", "taskId", `task id "${opts.taskId}" names queue "${queue}", but the task is submitted to "${opts.queue}"`);
  }
  return name;
}

function serialise(agent: AgentLike): unknown {
  if (agent && typeof (agent as Serializable).toJSON === "function") return (agent as Serializable).toJSON();
  return agent;
}

/**
 * The specs of the Agent and Swarm objects (anything with `toJSON()`) already checked, by object:
 * an application submits with the same few agents, and checking one again (depth, cycles, schema)
 * cost more than the rest of a submit. Kept with the JSON `toJSON()` gave, so an object whose
 * `toJSON()` says something else now is checked again.
 */
const checkedSpecs = new WeakMap<object, { raw: string; spec: RunnableSpec; json: string }>();

/** The agent's spec, checked (a ValidationError naming the bad field), and its JSON. */
function checkedSpec(agent: AgentLike, maxJsonDepth: number): { spec: RunnableSpec; json: string } {
  const raw = serialise(agent);
  const serializable = agent !== null && typeof agent === "object" && raw !== agent;
  let text: string | undefined;
  if (serializable) {
    const known = checkedSpecs.get(agent);
    // Only a spec as plain as JSON.stringify can tell (depth and cycles are checked before it).
    if (known) {
      try {
        text = JSON.stringify(raw);
      } catch {
        text = undefined;
      }
      if (text === known.raw) return known;
    }
  }
  checkJsonDepth(raw, maxJsonDepth, "agent");
  checkJson(raw, "agent", { root: "", only: "cycles" });
  const spec = parseInput(RunnableSpecSchema, raw, "agent");
  const checked = { raw: text ?? JSON.stringify(raw), spec, json: JSON.stringify(spec) };
  if (serializable) checkedSpecs.set(agent, checked);
  return checked;
}

/** The task a submission creates, as the store takes it (without a trace context: the caller's span adds it). */
export function newTaskOf(s: Submission): NewTask {
  const o = s.options;
  return {
    taskId: s.taskId,
    queue: o.queue,
    agent: s.agent.name,
    payload: s.payload,
    ...(s.inputPreview !== undefined && { inputPreview: s.inputPreview }),
    detailed: o.detailed,
    maxRetries: o.maxRetries,
    maxDeliveries: o.maxDeliveries,
    timeoutMs: o.timeoutMs,
    metadata: o.metadata,
    backoff: o.backoff,
    // A delay from now: the due time is set on Redis's clock.
    delayMs: s.runAt === undefined ? undefined : s.runAt - s.createdAt,
    priority: o.priority,
    ...(o.concurrencyKey !== undefined && { concurrency: { key: o.concurrencyKey, limit: o.concurrencyLimit ?? 1 } }),
  };
}
