// What a worker module may export, checked before anything starts: an export the worker app does
// not understand used to be ignored, so a module that exported `nodes` (instead of
// `graph: graphWorker({ nodes })`) started a worker whose node tasks waited QUEUED for ever.
import { ValidationError } from "@flotilla/core";
import { nearestFlag } from "./nearest-flag.ts";

/** Every export a worker module may have (named, or as the keys of its default export). */
export const MODULE_EXPORTS = ["tools", "agents", "providerFactory", "openAICompatible", "memory", "graph", "bus", "rateLimits"] as const;

/** Exports a module is given by mistake, and where what they hold belongs. */
const MISPLACED: Record<string, string> = {
  nodes: "graph node types are served as `export const graph = graphWorker({ nodes })` (@flotilla/graph)",
  subscriptions: "subscriptions are served as `export const bus = busWorker({ subscriptions })` (@flotilla/bus)",
  agent: "agents are exported as a list: `export const agents = [agent]`",
  tool: "tools are exported as `export const tools = [tool]` (a list, or a record by name)",
  rateLimit: "fleet-wide rate limits are a list: `export const rateLimits = [{ name, requestsPerMinute }]`",
  webhooks: "webhook settings go to busWorker: `export const bus = busWorker({ subscriptions, webhooks })`",
};

/** Keys that module systems add to every namespace, not exports of the user's. */
const SYSTEM_KEYS = new Set(["default", "__esModule", "module.exports"]);

const where = (path: string) => `${path} (--module / FLOTILLA_MODULE)`;

/** A module that loaded but exports what a worker cannot serve: `invalid worker configuration: module: …`. */
export class ModuleShapeError extends ValidationError {
  constructor(message: string) {
    super("worker configuration", [{ path: "module", message }]);
  }
}

function unknownExport(path: string, name: string, place: string): ValidationError {
  const meant = MISPLACED[name] ?? (nearestFlag(name, MODULE_EXPORTS) && `did you mean \`${nearestFlag(name, MODULE_EXPORTS)}\`?`);
  return new ModuleShapeError(
    `${where(path)} ${place} \`${name}\`, which a worker does not serve: ${meant || `a worker module exports ${MODULE_EXPORTS.join(", ")}`}`,
  );
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null;

/**
 * The exports a worker reads from the module namespace `mod` loaded from `path`: its named exports,
 * or its default export's keys when it has no named ones. A ValidationError (the worker app exits 2)
 * when it has both, when an export or key is not one a worker serves (naming where it belongs, for
 * the usual mistakes), and when `graph` or `bus` is not what graphWorker() or busWorker() returns.
 */
export function checkModuleShape(mod: Record<string, unknown>, path: string): Record<string, unknown> {
  const named = Object.keys(mod).filter((k) => !SYSTEM_KEYS.has(k) && mod[k] !== undefined);
  const fallback = mod.default;
  let source: Record<string, unknown> = mod;
  if (fallback !== undefined && named.length > 0) {
    throw new ModuleShapeError(
      `${where(path)} has both a default export and named exports (${named.join(", ")}): a worker reads one or the other, so export everything one way`,
    );
  }
  if (named.length === 0 && fallback !== undefined) {
    if (!isObject(fallback)) throw new ModuleShapeError(`${where(path)}: its default export must be an object of ${MODULE_EXPORTS.join(", ")}`);
    source = fallback;
  }
  const keys = source === mod ? named : Object.keys(source);
  for (const key of keys) {
    if (!(MODULE_EXPORTS as readonly string[]).includes(key)) throw unknownExport(path, key, source === mod ? "exports" : "has a default export with");
  }
  const graph = source.graph;
  if (graph !== undefined && !(isObject(graph) && typeof graph.execute === "function" && Array.isArray(graph.nodeTypes))) {
    throw new ModuleShapeError(`${where(path)}: \`graph\` must be what graphWorker({ nodes }) of @flotilla/graph returns`);
  }
  const bus = source.bus;
  if (bus !== undefined && !(isObject(bus) && typeof bus.start === "function" && Array.isArray(bus.subscriptions))) {
    throw new ModuleShapeError(`${where(path)}: \`bus\` must be what busWorker({ subscriptions }) of @flotilla/bus returns`);
  }
  return source;
}
