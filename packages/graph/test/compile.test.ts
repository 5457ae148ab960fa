import { ErrorCodes, ValidationError } from "@flotilla/core";
import { describe, expect, it } from "vitest";
import { compileGraph, defineNode, GraphBuilder, type GraphInput } from "../src/index.ts";

const invalid = (graph: GraphInput, message: RegExp) => {
  const err = (() => {
    try {
      compileGraph(graph);
    } catch (e) {
      return e;
    }
  })();
  expect(err).toMatchObject({ code: ErrorCodes.INVALID_GRAPH });
  expect((err as Error).message).toMatch(message);
};

describe("compileGraph: what cannot run fails at definition time", () => {
  it("an expression naming a node that does not come before it", () => {
    invalid(
      {
        nodes: [
          { id: "a", type: "t", next: ["b"], inputs: { x: "${{b.outputs.y}}" } },
          { id: "b", type: "t" },
        ],
      },
      /node a: an expression names b, which does not come before it/,
    );
    invalid({ nodes: [{ id: "a", type: "t", inputs: { x: "see ${{ghost.outputs}}" } }] }, /names ghost, which is not a node/);
    invalid({ nodes: [{ id: "a", type: "t", inputs: { x: "${{a.result}}" } }] }, /without .outputs/);
  });

  it("next or unites naming what is not there; a unites of no fan-out; a loop without maxIterations", () => {
    invalid({ nodes: [{ id: "a", type: "t", next: ["zz"] }] }, /next names zz, which is not a node/);
    invalid(
      {
        nodes: [
          { id: "a", type: "t", next: ["b"] },
          { id: "b", type: "t", unites: { id: "a" } },
        ],
      },
      /unites a, which is no fan-out node/,
    );
    invalid(
      {
        nodes: [
          { id: "a", type: "t", next: ["b"] },
          { id: "b", type: "t", next: ["a"] },
        ],
      },
      /node b loops back: give it maxIterations/,
    );
    invalid(
      {
        nodes: [
          { id: "a", type: "t" },
          { id: "a", type: "u" },
        ],
      },
      /used twice/,
    );
  });

  it("branches that meet without being united; an expression reaching into branches the node does not join", () => {
    invalid(
      {
        nodes: [
          { id: "s", type: "t", fanOut: true, next: ["p"] },
          { id: "x", type: "t", next: ["end"] },
          { id: "p", type: "t", next: ["end"] },
          { id: "end", type: "t" },
        ],
      },
      // p runs once per branch of s, x once: `end` would be both.
      /run in different branches; join fan-out branches with unites/,
    );
    invalid(
      {
        nodes: [
          { id: "s", type: "t", fanOut: true, next: ["p"] },
          { id: "p", type: "t", next: ["u"] },
          { id: "u", type: "t", unites: { id: "s" }, next: ["after"] },
          { id: "after", type: "t", inputs: { x: "${{p.outputs}}" } },
        ],
      },
      /names p, which runs in branches after does not join/,
    );
  });

  it("works out roots, scopes, loops and the default inputs", () => {
    const g = compileGraph({
      nodes: [
        { id: "s", type: "t", fanOut: true, next: ["p"] },
        { id: "p", type: "t", next: ["u"] },
        { id: "u", type: "t", unites: { id: "s", policy: "all-done" }, next: ["w"] },
        { id: "w", type: "t", next: ["r"] },
        { id: "r", type: "t", next: ["w", "z"], maxIterations: 2 },
        { id: "z", type: "t" },
      ],
    });
    expect(g.roots).toEqual(["s"]);
    expect(g.nodes.get("p")!.scope).toEqual(["s"]);
    expect(g.nodes.get("u")!.scope).toEqual([]);
    expect(g.nodes.get("r")!.next).toEqual([
      { id: "w", back: true },
      { id: "z", back: false },
    ]);
    expect([...g.nodes].filter(([, c]) => c.inLoop).map(([id]) => id)).toEqual(["w", "r"]);
    expect(g.nodes.get("s")!.inputs).toBe("${{input}}");
    expect(g.nodes.get("u")!.inputs).toBe("${{p.outputs}}");
    expect(g.nodes.get("p")!.queue).toBe("node.t");
  });
});

describe("GraphBuilder", () => {
  it("builds the same JSON a user would write, checked", () => {
    const built = new GraphBuilder("research", { version: 2 })
      .node("plan", { type: "planner", fanOut: true })
      .node("research", { type: "researcher", retry: { maxRetries: 2 } })
      .node("write", { type: "writer", unites: { id: "plan" }, inputs: { notes: "${{research.outputs.text}}" } })
      .edge("plan", "research")
      .edge("research", "write")
      .build();
    expect(built).toEqual({
      name: "research",
      version: 2,
      nodes: [
        { id: "plan", type: "planner", fanOut: true, next: ["research"] },
        { id: "research", type: "researcher", retry: { maxRetries: 2 }, next: ["write"] },
        { id: "write", type: "writer", unites: { id: "plan" }, inputs: { notes: "${{research.outputs.text}}" } },
      ],
    });
    expect(() =>
      new GraphBuilder()
        .node("a", { type: "t" })
        .node("b", { type: "t", inputs: { x: "${{c.outputs}}" } })
        .build(),
    ).toThrow(/names c/);
  });
});

describe("onBranchFailure: which failures fail the run at once, which once the run drains", () => {
  const topo = (graph: GraphInput) => (JSON.parse(compileGraph(graph).topology) as { n: Record<string, { ff?: 1; fr?: 1 }> }).n;
  const flags = (graph: GraphInput) => Object.fromEntries(Object.entries(topo(graph)).map(([id, t]) => [id, t.ff ? "ff" : t.fr ? "fr" : "-"]));

  it("each join decides for the failures that reach it; fail-fast wins where a failure reaches both kinds; all-done takes failures in", () => {
    const built = new GraphBuilder("nested")
      .node("o", { type: "t", fanOut: true })
      .node("i", { type: "t", fanOut: true })
      .node("w", { type: "t" })
      .node("s", { type: "t", unites: { id: "i", onBranchFailure: "finish-running" } })
      .node("c", { type: "t", unites: { id: "o" } })
      .edge("o", "i")
      .edge("i", "w")
      .edge("w", "s")
      .edge("s", "c")
      .build();
    // w and i (inner branches) answer to s: finish-running; s (outer branches) to c: fail-fast.
    expect(flags(built)).toEqual({ o: "ff", i: "fr", w: "fr", s: "ff", c: "ff" });
    // A branch node that also reaches an end of its own fails the run at once whatever its join says.
    expect(
      flags({
        nodes: [
          { id: "f", type: "t", fanOut: true, next: ["w"] },
          { id: "w", type: "t", next: ["j", "log"] },
          { id: "log", type: "t" },
          { id: "j", type: "t", unites: { id: "f", onBranchFailure: "finish-running" } },
        ],
      }),
    ).toMatchObject({ w: "ff", log: "ff" });
    expect(
      flags({
        nodes: [
          { id: "f", type: "t", fanOut: true, next: ["w"] },
          { id: "w", type: "t", next: ["j"] },
          { id: "j", type: "t", unites: { id: "f", policy: "all-done" } },
        ],
      }),
    ).toMatchObject({ f: "-", w: "-" });
  });

  it("the builder takes it in unites, typed", () => {
    new GraphBuilder()
      .node("f", { type: "t", fanOut: true })
      // @ts-expect-error not a policy
      .node("j", { type: "t", unites: { id: "f", onBranchFailure: "finish" } });
    invalid(
      {
        nodes: [
          { id: "f", type: "t", fanOut: true, next: ["j"] },
          { id: "j", type: "t", unites: { id: "f", policy: "all-done", onBranchFailure: "finish-running" } },
        ],
      },
      /node j: onBranchFailure is for an all-success join/,
    );
  });
});

describe("defineNode: a node type has only what a node type uses", () => {
  it("refuses fanOut (and the graph's other keys) on a node type, saying it goes on the graph's node; an unknown key by name", () => {
    const define = (definition: Record<string, unknown>) => () => defineNode({ type: "t", execute: () => 1, ...definition } as never);
    expect(define({ fanOut: true })).toThrow(ValidationError);
    expect(define({ fanOut: true })).toThrow(/fanOut: fan-out is declared on the graph's node \(`\{ id, type, fanOut: true \}` in the graph's nodes\)/);
    expect(define({ next: ["b"] })).toThrow(/next: edges are declared on the graph's node/);
    expect(define({ exectue: () => 1 })).toThrow(/exectue: unknown key: a node type has type, inputSchema, outputSchema, execute/);
    expect(() => defineNode({ type: "t" } as never)).toThrow(/execute: must be a function/);
    expect(defineNode({ type: "t", execute: () => 1 }).type).toBe("t");
  });
});
