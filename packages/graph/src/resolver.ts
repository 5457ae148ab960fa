import { type JsonValue, parseJsonOr } from "@flotilla/core";
import type { CompiledGraph } from "./compile.ts";
import { BranchValues, resolveInputs } from "./expressions.ts";
import { type Instance, instanceKey } from "./instances.ts";
import type { RunStore } from "./run-store.ts";

/** What an instance runs with: its resolved inputs and the run state it sees. */
export interface Resolved {
  input: JsonValue;
  state: JsonValue;
}

type Source = { kind: "one"; field: string; item?: number } | { kind: "branches"; fields: string[] };

const isObject = (v: JsonValue | undefined): v is Record<string, JsonValue> => v !== null && typeof v === "object" && !Array.isArray(v);

/** What one instance needs read: its ancestors in graph order, and (once counters are known) where each one's value is. */
interface Plan {
  instance: Instance;
  ancestors: string[];
  counterFields: string[];
  sources: Map<string, Source>;
}

/**
 * Resolves an instance's inputs and state from the run's stored outputs. Each ancestor is read as
 * the instance sees it: the ancestor's run on its own branch (the latest, in a loop); a fan-out it
 * runs under gives it its own item; the nodes of the fan-out a unites node joins give it lists, in
 * branch order (a branch that did not reach it: null; with `all-done`, a failed one: `{ error }`).
 * The state is the ancestors' object outputs merged in graph order, later keys winning (branches in
 * branch order), so parallel branches never see each other's writes.
 */
export async function resolveInstance(store: RunStore, runId: string, compiled: CompiledGraph, runInput: JsonValue, instance: Instance): Promise<Resolved> {
  return (await resolveInstances(store, runId, compiled, runInput, [instance]))[0]!;
}

/**
 * resolveInstance for many instances of one run at once (the branches of a fan-out): two reads in
 * all (the counters, then the outputs), each stored output parsed once however many read it.
 */
export async function resolveInstances(
  store: RunStore,
  runId: string,
  compiled: CompiledGraph,
  runInput: JsonValue,
  instances: readonly Instance[],
): Promise<Resolved[]> {
  const plans = instances.map((instance) => plan(compiled, instance));
  // First the counters: loop run counts and the widths of the fan-outs joined.
  const counterFields = [...new Set(plans.flatMap((p) => p.counterFields))];
  const counters = await store.counters(runId, counterFields);
  const counterOf = new Map(counterFields.map((f, i) => [f, counters[i]!]));
  const fields = new Set<string>();
  for (const p of plans) for (const f of locate(compiled, p, counterOf)) fields.add(f);
  const list = [...fields];
  const values = await store.outputs(runId, list);
  const stored = new Map(list.map((f, i) => [f, values[i] ?? null]));
  const cache = new Map<string, JsonValue | undefined>();
  const parsed = (f: string): JsonValue | undefined => {
    if (cache.has(f)) return cache.get(f);
    const text = stored.get(f);
    const value = text === null || text === undefined ? undefined : (parseJsonOr(text, null) as JsonValue);
    cache.set(f, value);
    return value;
  };
  return plans.map((p) => evaluate(compiled, p, runInput, parsed));
}

function plan(compiled: CompiledGraph, instance: Instance): Plan {
  const c = compiled.nodes.get(instance.node)!;
  // A loop's later pass comes after the node that looped back, and sees what the pass before it wrote.
  const before = new Set(c.ancestors);
  if (instance.n > 1) {
    for (const [id, other] of compiled.nodes) {
      if (!other.next.some((e) => e.back && e.id === instance.node)) continue;
      before.add(id);
      for (const a of other.ancestors) before.add(a);
    }
  }
  const ancestors = compiled.order.filter((a) => before.has(a));
  const counterFields: string[] = [];
  for (const a of ancestors) {
    const ac = compiled.nodes.get(a)!;
    if (ac.repeats) counterFields.push(`n:${a}@${instance.branch.slice(0, ac.scope.length).join(".")}`);
  }
  const united = c.node.unites?.id;
  if (united) counterFields.push(`w:${united}@${instance.branch.join(".")}`);
  return { instance, ancestors, counterFields, sources: new Map() };
}

/** Fills the plan's sources from the counters; returns the output fields they read. */
function locate(compiled: CompiledGraph, p: Plan, counterOf: ReadonlyMap<string, number>): string[] {
  const { instance } = p;
  const c = compiled.nodes.get(instance.node)!;
  const branch = instance.branch;
  const united = c.node.unites?.id;
  const width = united ? (counterOf.get(`w:${united}@${branch.join(".")}`) ?? 0) : 0;
  const fields: string[] = [];
  for (const a of p.ancestors) {
    const ac = compiled.nodes.get(a)!;
    const depth = ac.scope.length;
    const within = depth <= c.scope.length && ac.scope.every((s, i) => c.scope[i] === s);
    if (within) {
      const path = branch.slice(0, depth).join(".");
      // In a loop, the latest run of each node; of the node itself, the run before this one.
      const n = a === instance.node ? instance.n - 1 : ac.repeats ? Math.max(1, counterOf.get(`n:${a}@${path}`) ?? 1) : 1;
      const field = instanceKey({ node: a, branch: branch.slice(0, depth), n });
      fields.push(field);
      // Under a fan-out, its node's output (the list) gives each branch its own item.
      const runsUnder = ac.node.fanOut && c.scope[depth] === a;
      p.sources.set(a, runsUnder ? { kind: "one", field, item: branch[depth]! } : { kind: "one", field });
    } else if (united && ac.scope.length === c.scope.length + 1 && ac.scope[c.scope.length] === united) {
      const branchFields = Array.from({ length: width }, (_, i) => instanceKey({ node: a, branch: [...branch, i], n: 1 }));
      for (const f of branchFields) fields.push(f, `!${f}`);
      p.sources.set(a, { kind: "branches", fields: branchFields });
    }
  }
  return fields;
}

function evaluate(compiled: CompiledGraph, p: Plan, runInput: JsonValue, parsed: (field: string) => JsonValue | undefined): Resolved {
  const one = (s: Extract<Source, { kind: "one" }>): JsonValue | undefined => {
    const v = parsed(s.field);
    return s.item === undefined ? v : Array.isArray(v) ? v[s.item] : undefined;
  };
  const lookupValue = (a: string): JsonValue | BranchValues | undefined => {
    const s = p.sources.get(a);
    if (!s) return undefined;
    if (s.kind === "branches") {
      return new BranchValues(
        s.fields.map((f) => {
          const error = parsed(`!${f}`);
          return error !== undefined ? { error } : (parsed(f) ?? null);
        }),
      );
    }
    return one(s);
  };
  const state: Record<string, JsonValue> = {};
  for (const a of p.ancestors) {
    const s = p.sources.get(a);
    if (s?.kind === "one") {
      const v = one(s);
      if (isObject(v)) Object.assign(state, v);
    } else if (s?.kind === "branches") {
      for (const f of s.fields) {
        const v = parsed(f);
        if (isObject(v)) Object.assign(state, v);
      }
    }
  }
  const c = compiled.nodes.get(p.instance.node)!;
  const input = resolveInputs(c.inputs, (root) => (root === "input" ? runInput : root === "state" ? state : lookupValue(root)));
  return { input, state };
}
