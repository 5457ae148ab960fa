import { type AgentSpec, type AgentSpecInput, AgentSpecSchema, type JsonValue, parseInput } from "@flotilla/core";

export interface AgentConfig {
  name: string;
  /** `provider:model`, e.g. `scripted:echo` or `openai:gpt-4.1-mini`. */
  model: string;
  instructions?: string;
  /** Names of tools registered on the worker. */
  tools?: string[];
  /** Provider- and runtime-specific options (plain JSON), e.g. `maxSteps` or `scripted`. */
  options?: Record<string, JsonValue>;
}

/** An agent definition: plain data, so it can travel to any worker as JSON. */
export class Agent {
  readonly name: string;
  readonly model: string;
  readonly instructions: string;
  readonly tools: readonly string[];
  readonly options: Readonly<Record<string, JsonValue>>;

  constructor(config: AgentConfig) {
    const spec = parseInput(AgentSpecSchema, { kind: "agent", ...config }, "agent");
    this.name = spec.name;
    this.model = spec.model;
    this.instructions = spec.instructions;
    this.tools = spec.tools;
    this.options = spec.options;
  }

  /** The provider part of `model`. */
  get provider(): string {
    return this.model.slice(0, this.model.indexOf(":"));
  }

  /** The model part of `model`, as the provider names it. */
  get modelName(): string {
    return this.model.slice(this.model.indexOf(":") + 1);
  }

  toJSON(): AgentSpec {
    return {
      kind: "agent",
      name: this.name,
      model: this.model,
      instructions: this.instructions,
      tools: [...this.tools],
      options: { ...this.options },
    };
  }

  /** Rebuilds an agent from `toJSON()` output; throws a ValidationError naming the bad field. */
  static fromJSON(json: AgentSpecInput | unknown): Agent {
    const spec = parseInput(AgentSpecSchema, json, "agent");
    return new Agent(spec);
  }
}
