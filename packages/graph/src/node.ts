import type { AgentSpecInput, JsonValue, SwarmSpecInput } from "@flotilla/core";
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

/** Defines a node type (checked: its type is a valid name). */
export function defineNode<I = unknown, O extends JsonValue = JsonValue>(definition: NodeDefinition<I, O>): NodeDefinition<I, O> {
  NodeTypeSchema.parse(definition.type);
  return definition;
}
