import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { testRedisEnv } from "@flotilla/testing";
import { describe, expect, it } from "vitest";

const main = fileURLToPath(new URL("../src/main.ts", import.meta.url));

function runDemo(env: Record<string, string>): Promise<{ code: number | null; out: string }> {
  const child = spawn(process.execPath, ["--conditions=@flotilla/source", main], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout.on("data", (d: Buffer) => {
    out += d.toString();
  });
  child.stderr.on("data", (d: Buffer) => {
    out += d.toString();
  });
  return new Promise((resolve) => child.on("exit", (code) => resolve({ code, out })));
}

/** The writer's reply (src/main.ts): its line of the final table shows its first words. */
const WRITER_REPLY =
  "Flotilla runs your agents on a fleet of workers over Redis. You submit a run, any worker claims it, " +
  "and you watch every token arrive live, from any process, replaying what you missed without a gap.";

/** The last column of the final table's line for `label`. */
function detailOf(out: string, label: string): string {
  const table = out.slice(out.indexOf("Final statuses"));
  const line = table.split("\n").find((l) => l.startsWith(`  ${label} `));
  return /.* ms {2}(.*)$/.exec(line ?? "")?.[1] ?? `no line for ${label}`;
}

describe("the demo", () => {
  it("runs against the given Redis and exits 0 with every outcome shown, in words, nothing cut mid-word", async () => {
    const { code, out } = await runDemo(testRedisEnv());
    expect(out).toContain("6 COMPLETED, 1 FAILED, 1 CANCELLED");
    // The cancel's outcome in words, not the API's "requested".
    expect(out).toContain("Cancelled marathon while it ran: its worker stops it");
    expect(out).not.toMatch(/while it ran: requested/);
    expect(out).toMatch(/worker-1 .* live {2}completed \d+/);
    // A long answer is cut after a whole word; errors are the tasks' own, whole.
    const writer = detailOf(out, "writer");
    expect(writer).toMatch(/^".+…"$/);
    const shown = writer.slice(1, -2);
    expect(WRITER_REPLY.startsWith(shown)).toBe(true);
    expect(WRITER_REPLY[shown.length]).toMatch(/[\s,.]/);
    expect(detailOf(out, "flaky")).toBe("AGENT_ERROR: the model gave up");
    expect(detailOf(out, "marathon")).toBe("CANCELLED: the demo cancels the marathon");
    expect(code).toBe(0);
  }, 60_000);

  it("starts a throwaway redis-server when nothing answers", async () => {
    const { code, out } = await runDemo({ REDIS_URL: "redis://127.0.0.1:1" });
    expect(out).toContain("starting a throwaway redis-server");
    expect(out).toContain("6 COMPLETED, 1 FAILED, 1 CANCELLED");
    expect(code).toBe(0);
  }, 60_000);
});
