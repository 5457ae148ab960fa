import { describe, expect, it } from "vitest";
import { runExample } from "./run-example.ts";

describe("examples", () => {
  it("research: two tools, then a structured report", async () => {
    const { code, out } = await runExample("research");
    expect(code, out).toBe(0);
    expect(out).toMatch(/→ search\(\{"topic":"redis"\}\)/);
    expect(out).toMatch(/← word_count: \{"words":15\}/);
    expect(out).toMatch(/report: \{"topic":"redis","summary":".+","words":15\}/);
    expect(out).toMatch(/\[completed\]/);
  });

  it("swarm: triage hands over to billing, who answers", async () => {
    const { code, out } = await runExample("swarm");
    expect(code, out).toBe(0);
    expect(out).toMatch(/handoff: triage → billing \(a question about an invoice\)/);
    expect(out).toMatch(/answered by billing: Your invoice is paid/);
  });
});
