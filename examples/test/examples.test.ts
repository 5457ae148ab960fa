import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

/** Runs an example offline (scripted model), as `pnpm --filter @flotilla/examples <name>` does. */
async function runExample(name: string): Promise<{ code: number | null; out: string }> {
  const file = fileURLToPath(new URL(`../src/${name}.ts`, import.meta.url));
  const env = { ...process.env, OPENAI_API_KEY: "", ANTHROPIC_API_KEY: "", FLOTILLA_EXAMPLE_MODEL: "" };
  const child = spawn(process.execPath, ["--conditions=@flotilla/source", file], { env, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout.on("data", (d: Buffer) => {
    out += d.toString();
  });
  child.stderr.on("data", (d: Buffer) => {
    out += d.toString();
  });
  const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
  return { code, out };
}

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
