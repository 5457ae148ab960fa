import { type AgentSpecInput, type JsonValue, type SwarmSpecInput, ValidationError } from "@flotilla/core";
import type { AgentEvent } from "@flotilla/events";
import type { z } from "zod";
import { NodeTypeSchema } from "./definition.ts";

/** What a node function gets beside its inputs. */
export interface NodeContext {
  /** Aborted on cancel (of the node or its run), timeout, shutdown or a lost claim. */
  signal: AbortSignal;
  /** Publishes a live event on the node's task (its run's `stream()` carries it, tagged with the node). */
  emit(event: AgentEvent): void;
  /** The run state this node sees: its ancestors' object outputs merged (see the package README). */
  state: JsonValue;
  run: { id: string };
  node: { id: string; type: string; instance: string; attempt: number };
  /**
   * Runs an agent or swarm through the worker's executor (in process, or Temporal mode), with this
   * node's signal and events; returns its result (`{ text, output?, steps, usage, agent }`).
   */
  runAgent(agent: { toJSON(): unknown } | AgentSpecInput | SwarmSpecInput, input: JsonValue): Promise<JsonValue>;
}

/** A node type served by workers: registered next to tools, routed to its own queue. */
export interface NodeDefinition<I = unknown, O extends JsonValue = JsonValue> {
  type: string;
  /** Checks (and types) the resolved inputs; a mismatch fails the node without retries. */
  inputSchema?: z.ZodType<I>;
  /** Checks the output before it is recorded. */
  outputSchema?: z.ZodType<O>;
  execute(inputs: I, ctx: NodeContext): Promise<O> | O;
}

/** Chooses among a node's `next` from its output: node ids (one or several). */
export type Router = (output: JsonValue, ctx: { state: JsonValue }) => string | readonly string[] | Promise<string | readonly string[]>;

/** The keys a node definition may have; what belongs to the graph is said where it goes. */
const NODE_KEYS = new Set(["type", "inputSchema", "outputSchema", "execute"]);
const ON_THE_GRAPH: Record<string, string> = {
  fanOut: "fan-out is declared on the graph's node (`{ id, type, fanOut: true }` in the graph's nodes), not on its type",
  next: "edges are declared on the graph's node (`next`), not on its type",
  unites: "joins are declared on the graph's node (`unites`), not on its type",
  router: "routers are named on the graph's node (`router`) and registered with graphWorker({ routers })",
  retry: "retries are declared on the graph's node (`retry`), not on its type",
  inputs: "a node's inputs are declared on the graph's node (`inputs`), not on its type",
};

/**
 * Defines a node type (checked: its type is a valid name, `execute` a function, and no key it does
 * not use: a ValidationError names the key and, for what belongs on the graph's node, where it goes).
 */
export function defineNode<I = unknown, O extends JsonValue = JsonValue>(definition: NodeDefinition<I, O>): NodeDefinition<I, O> {
  for (const key of Object.keys(definition)) {
    if (NODE_KEYS.has(key)) continue;
    throw ValidationError.of("node definition", key, ON_THE_GRAPH[key] ?? `unknown key: a node type has ${[...NODE_KEYS].join(", ")}`);
  }
  if (typeof definition.execute !== "function") throw ValidationError.of("node definition", "execute", "must be a function");
  NodeTypeSchema.parse(definition.type);
  return definition;
}
