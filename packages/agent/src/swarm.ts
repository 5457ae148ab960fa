import { type JsonValue, type OutputCarrier, parseInput, type SwarmSpec, type SwarmSpecInput, SwarmSpecSchema } from "@flotilla/core";
import { Agent } from "./agent.ts";

export interface SwarmConfig {
  name: string;
  agents: Agent<unknown>[];
  /**
   * `handoff`: the entry agent runs and may hand control to another with the built-in
   * `transfer_to_agent` tool (a `handoff` event marks it); `pipeline`: every agent runs in order,
   * each given the previous one's answer. @default "handoff"
   */
  mode?: "handoff" | "pipeline";
  /** The agent that starts. @default the first */
  entry?: string;
  /** Handoffs at most in one run. @default 8 */
  maxHandoffs?: number;
}

/**
 * Several agents run as one task. Plain data like Agent: it travels to any worker as JSON. Its tasks
 * resolve with an AgentResult whose `output` is the answering agent's (not known in types).
 */
export class Swarm implements OutputCarrier<JsonValue | undefined> {
  declare readonly "~output"?: [JsonValue | undefined];
  readonly name: string;
  readonly agents: readonly Agent<unknown>[];
  readonly mode: "handoff" | "pipeline";
  readonly entry: string;
  readonly maxHandoffs: number;

  constructor(config: SwarmConfig) {
    const spec = parseInput(SwarmSpecSchema, { kind: "swarm", ...config, agents: config.agents.map((a) => a.toJSON()) }, "swarm");
    this.name = spec.name;
    this.agents = config.agents;
    this.mode = spec.mode;
    this.entry = spec.entry ?? spec.agents[0]!.name;
    this.maxHandoffs = spec.maxHandoffs;
  }

  toJSON(): SwarmSpec {
    return { kind: "swarm", name: this.name, agents: this.agents.map((a) => a.toJSON()), mode: this.mode, entry: this.entry, maxHandoffs: this.maxHandoffs };
  }

  /** Rebuilds a swarm from `toJSON()` output; throws a ValidationError naming the bad field. */
  static fromJSON(json: SwarmSpecInput | unknown): Swarm {
    const spec = parseInput(SwarmSpecSchema, json, "swarm");
    return new Swarm({ ...spec, agents: spec.agents.map((a) => Agent.fromJSON(a)) });
  }
}
