import { ErrorCodes, FlotillaError, type Keys, parseJsonOr } from "@flotilla/core";
import type { Redis } from "ioredis";
import { compileGraph } from "./compile.ts";
import { type Graph, type GraphInput, GraphSchema } from "./definition.ts";
import { scripts } from "./scripts.ts";

/** `name` or `name@version`: how a run names a stored template. */
const REF = /^([A-Za-z0-9_.-]{1,64})(?:@(\d{1,9}))?$/;

/**
 * Graph templates stored by name, each version kept as it was saved (versions never change; see
 * lua/saveTemplate-1.lua): save
 * a graph under its `name` (a new version, or the `version` it gives), start a run of `name@3` or of
 * `name` (its latest version) from any process or language.
 */
export class GraphTemplates {
  private readonly redis: Redis;
  private readonly keys: Keys;

  constructor(redis: Redis, keys: Keys) {
    this.redis = redis;
    this.keys = keys;
  }

  /**
   * Saves a graph (checked first) as a version of its name: the graph's own `version`, or the next
   * one. Saving a version that exists with other content is refused (INVALID_GRAPH); the same
   * content again is fine.
   */
  async save(graph: GraphInput | Graph): Promise<{ name: string; version: number }> {
    const { version, ...content } = compileGraph(graph).graph;
    const [outcome, saved] = (await scripts.saveTemplate.run(
      this.redis,
      [this.keys.graphTemplate(content.name)],
      [version ?? "", JSON.stringify(content)],
    )) as ["saved" | "same" | "conflict", number];
    if (outcome === "conflict") {
      throw new FlotillaError(ErrorCodes.INVALID_GRAPH, `template ${content.name}@${saved} exists with other content: versions never change, save a new one`);
    }
    return { name: content.name, version: saved };
  }

  /** A stored template by `name` (latest version) or `name@version`; TEMPLATE_NOT_FOUND when there is none. */
  async get(ref: string): Promise<Graph> {
    const m = REF.exec(ref);
    if (!m) throw new FlotillaError(ErrorCodes.VALIDATION, `"${ref}" is no template name: use <name> or <name>@<version>`);
    const key = this.keys.graphTemplate(m[1]!);
    const version = m[2] ?? (await this.redis.hget(key, "latest"));
    const json = version ? await this.redis.hget(key, String(version)) : null;
    if (!json) throw new FlotillaError(ErrorCodes.TEMPLATE_NOT_FOUND, `no graph template ${ref}`);
    return GraphSchema.parse({ ...(parseJsonOr(json, {}) as object), version: Number(version) });
  }

  /** The versions stored under a name, oldest first. */
  async versions(name: string): Promise<number[]> {
    const fields = await this.redis.hkeys(this.keys.graphTemplate(name));
    return fields
      .filter((f) => /^\d+$/.test(f))
      .map(Number)
      .sort((a, b) => a - b);
  }
}
