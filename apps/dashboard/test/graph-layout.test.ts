// The run graph's pure parts, without a browser: the layered layout (layers by longest path, loops'
// back edges set aside, no two boxes overlapping) and the edges inferred from node tasks' times.
import { describe, expect, it } from "vitest";
import { DEFAULT_LAYOUT, layoutGraph } from "../src/graph-layout.ts";
import { nodeState, runTopology } from "../src/run-topology.ts";
import type { RunDetail, RunNode } from "../src/types.ts";

const layers = (layout: ReturnType<typeof layoutGraph>) => Object.fromEntries(layout.nodes.map((n) => [n.id, n.layer]));

describe("layoutGraph", () => {
  it("puts each node one layer after its furthest predecessor, left to right, boxes apart", () => {
    const layout = layoutGraph(
      ["A", "B", "C", "D", "E"],
      [
        ["A", "B"],
        ["A", "C"],
        ["B", "D"],
        ["C", "D"],
        ["A", "E"],
        ["D", "E"],
      ],
    );
    expect(layers(layout)).toEqual({ A: 0, B: 1, C: 1, D: 2, E: 3 });
    expect(layout.edges).toHaveLength(6);
    expect(layout.edges.every((e) => !e.back)).toBe(true);
    for (const a of layout.nodes)
      for (const b of layout.nodes) {
        if (a === b) continue;
        const apart = Math.abs(a.x - b.x) >= DEFAULT_LAYOUT.nodeWidth || Math.abs(a.y - b.y) >= DEFAULT_LAYOUT.nodeHeight;
        expect(apart, `${a.id} and ${b.id} overlap`).toBe(true);
      }
    const at = Object.fromEntries(layout.nodes.map((n) => [n.id, n]));
    expect(at.A!.x).toBeLessThan(at.B!.x);
    expect(at.D!.x).toBeLessThan(at.E!.x);
    expect(layout.width).toBeGreaterThanOrEqual(at.E!.x + DEFAULT_LAYOUT.nodeWidth);
    expect(layout.height).toBeGreaterThanOrEqual(Math.max(...layout.nodes.map((n) => n.y)) + DEFAULT_LAYOUT.nodeHeight);
  });

  it("sets a loop's edge back aside (an arc), a node to itself too; ignores duplicates and unknown ids", () => {
    const layout = layoutGraph(
      ["A", "B", "C"],
      [
        ["A", "B"],
        ["B", "C"],
        ["C", "B"],
        ["C", "C"],
        ["A", "B"],
        ["A", "Z"],
      ],
    );
    expect(layers(layout)).toEqual({ A: 0, B: 1, C: 2 });
    expect(layout.edges.map((e) => `${e.from}>${e.to}${e.back ? " back" : ""}`)).toEqual(["A>B", "B>C", "C>B back", "C>C back"]);
  });

  it("orders a layer by its neighbours, so parallel chains do not cross", () => {
    // Given in an order that would cross: a1 feeds b1, a2 feeds b2, but b2 comes first.
    const layout = layoutGraph(
      ["a1", "a2", "b2", "b1"],
      [
        ["a1", "b1"],
        ["a2", "b2"],
      ],
    );
    const y = Object.fromEntries(layout.nodes.map((n) => [n.id, n.y]));
    expect(Math.sign(y.a1! - y.a2!)).toBe(Math.sign(y.b1! - y.b2!));
  });
});

const node = (instance: string, status: RunNode["status"] = "EXECUTED"): RunNode => {
  const [id, rest] = instance.split("@") as [string, string];
  const [branch] = rest.split("#") as [string];
  return { node: id, branch: branch ? branch.split(".").map(Number) : [], n: 1, instance, status, taskId: `q/${instance}` };
};

describe("runTopology / nodeState", () => {
  it("runTopology: the definition's nodes and their next as edges, and a node it does not name still drawn", () => {
    const definition = { nodes: [{ id: "A", next: ["B", "C"] }, { id: "B", next: ["D"] }, { id: "C", next: ["D"] }, { id: "D" }] };
    const run = { nodes: [node("A@#1"), node("X@#1")], definition } as unknown as RunDetail;
    expect(runTopology(run)).toEqual({
      nodes: ["A", "B", "C", "D", "X"],
      edges: [
        ["A", "B"],
        ["A", "C"],
        ["B", "D"],
        ["C", "D"],
      ],
    });
  });

  it("nodeState: work under way first, then failures, then what is done", () => {
    expect(nodeState([node("w@0#1", "EXECUTED"), node("w@1#1", "RUNNING")]).status).toBe("RUNNING");
    expect(nodeState([node("w@0#1", "EXECUTED"), node("w@1#1", "ERRORED")]).status).toBe("ERRORED");
    expect(nodeState([node("w@0#1", "SKIPPED")]).status).toBe("SKIPPED");
    // A branch still stopping after its run was cancelled is under way: before the ones already CANCELLED or ERRORED.
    expect(nodeState([node("w@0#1", "CANCELLED"), node("w@1#1", "ERRORED"), node("w@2#1", "CANCELLING")]).status).toBe("CANCELLING");
    expect(nodeState([]).status).toBe("UNREACHED");
  });
});
