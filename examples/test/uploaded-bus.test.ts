import { describe, expect, it } from "vitest";
import { runExample } from "./run-example.ts";

describe("examples", () => {
  it("uploaded-bus: one upload reaches two agent subscriptions; both replies arrive correlated; request() gets an answer", async () => {
    const { code, out } = await runExample("uploaded-bus");
    expect(code, out).toBe(0);
    expect(out).toMatch(/^→ published file\.uploaded \d+-\d+ \(correlationId upload-42\)$/m);
    expect(out).toMatch(/^← indexer@\S+ answered upload-42: keywords for q3-report\.pdf: quarterly, revenue, forecast$/m);
    expect(out).toMatch(/^← virus-scan@\S+ answered upload-42: q3-report\.pdf: clean \(a PDF from a known sender\)$/m);
    expect([...out.matchAll(/causationId = the upload/g)]).toHaveLength(2);
    expect(out).toMatch(/^subscription indexer: delivered 1, acked 1, dead 0$/m);
    expect(out).toMatch(/^subscription virus-scan: delivered 1, acked 1, dead 0$/m);
    expect(out).toMatch(/^request → (keywords for holiday-photos\.zip|holiday-photos\.zip: clean)/m);
  });
});
