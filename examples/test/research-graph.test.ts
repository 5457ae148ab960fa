import { describe, expect, it } from "vitest";
import { runExample } from "./run-example.ts";

const count = (out: string, pattern: RegExp) => [...out.matchAll(new RegExp(pattern, "gm"))].length;

describe("examples", () => {
  it("research-graph: plan fans out into three research branches, one write unites them", async () => {
    const { code, out } = await runExample("research-graph");
    expect(code, out).toBe(0);
    // The graph's JSON, as the builder made it.
    expect(out).toMatch(/^\{"name":"research","nodes":\[\{"id":"plan","type":"plan","fanOut":true,"next":\["research"\]\}/m);
    // The plan ran once; three research branches started, streamed their notes and finished; one write.
    expect(count(out, /^▶ plan started/), out).toBe(1);
    for (const branch of [0, 1, 2]) {
      expect(count(out, new RegExp(`^▶ research\\[${branch}\\] started \\(attempt 1\\)$`)), out).toBe(1);
      expect(count(out, new RegExp(`^ {2}research\\[${branch}\\] │ Notes on .+`)), out).toBe(1);
      expect(count(out, new RegExp(`^■ research\\[${branch}\\] EXECUTED$`)), out).toBe(1);
    }
    expect(count(out, /^▶ research\[\d+\] started/), out).toBe(3);
    expect(count(out, /^▶ write started/), out).toBe(1);
    expect(count(out, /^■ write EXECUTED$/), out).toBe(1);
    expect(out).toMatch(/^\[run succeeded\]$/m);
    // Each branch researched its own subtopic, in branch order.
    expect(out).toMatch(/research\[0\] │ Notes on How Redis streams/);
    expect(out).toMatch(/research\[2\] │ Notes on Retries, dead letters/);
    // The final report, from result(), and every node instance in status().
    expect(out).toMatch(/^report: Durable work queues on Redis\. A stream holds the work/m);
    expect(out).toMatch(/^status: SUCCEEDED$/m);
    expect(count(out, /^ {2}(plan|research\[\d\]|write) +EXECUTED +on worker-[ab]$/), out).toBe(5);
  });
});
