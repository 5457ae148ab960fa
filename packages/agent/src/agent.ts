import { type AgentSpec, type AgentSpecInput, AgentSpecSchema, type JsonValue, type OutputCarrier, parseInput } from "@flotilla/core";
import { z } from "zod";

/** `O`: the type of the output schema's answer, inferred from a zod `outputSchema`. */
export interface AgentConfig<O = JsonValue | undefined> {
  name: string;
  /** `provider:model`, e.g. `scripted:echo` or `openai:gpt-4.1-mini`. */
  model: string;
  instructions?: string;
  /** Names of tools registered on the worker. */
  tools?: string[];
  /**
   * Options (plain JSON): `maxSteps`; call settings (`temperature`, `maxOutputTokens`, `topP`, `topK`,
   * `seed`, …); objects by provider name are that provider's options (`openai: {…}`, `scripted: {…}`).
   */
  options?: Record<string, JsonValue>;
  /** The final answer must be JSON of this shape: a zod schema, or JSON Schema. It travels as JSON Schema. */
  outputSchema?: z.ZodType<O> | Record<string, JsonValue>;
  /**
   * The fleet-wide rate limit its model turns draw from (`{ name, requestsPerMinute, tokensPerMinute }`
   * configured on the workers under this name): each turn takes a request and its estimated tokens
   * before it calls the provider, and settles the estimate with the usage after.
   */
  rateLimit?: string;
}

/**
 * An agent definition: plain data, so it can travel to any worker as JSON. `O` is its output
 * schema's type (from a zod `outputSchema`), which types what its tasks resolve with
 * (`TaskHandle<AgentResult<O>>`); types only, nothing of it exists at runtime.
 */
export class Agent<O = JsonValue | undefined> implements OutputCarrier<O> {
  declare readonly "~output"?: [O];
  readonly name: string;
  readonly model: string;
  readonly instructions: string;
  readonly tools: readonly string[];
  readonly options: Readonly<Record<string, JsonValue>>;
  readonly outputSchema: Readonly<Record<string, JsonValue>> | undefined;
  readonly rateLimit: string | undefined;

  constructor(config: AgentConfig<O>) {
    const { outputSchema, ...rest } = config;
    const json = outputSchema instanceof z.ZodType ? (z.toJSONSchema(outputSchema, { target: "draft-7" }) as Record<string, JsonValue>) : outputSchema;
    const spec = parseInput(AgentSpecSchema, { kind: "agent", ...rest, ...(json && { outputSchema: json }) }, "agent");
    this.name = spec.name;
    this.model = spec.model;
    this.instructions = spec.instructions;
    this.tools = spec.tools;
    this.options = spec.options;
    this.outputSchema = spec.outputSchema;
    this.rateLimit = spec.rateLimit;
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
      ...(this.outputSchema && { outputSchema: { ...this.outputSchema } }),
      ...(this.rateLimit !== undefined && { rateLimit: this.rateLimit }),
    };
  }

  /** Rebuilds an agent from `toJSON()` output; throws a ValidationError naming the bad field. */
  static fromJSON(json: AgentSpecInput | unknown): Agent {
    const spec = parseInput(AgentSpecSchema, json, "agent");
    return new Agent(spec as AgentConfig<JsonValue | undefined>);
  }
}
