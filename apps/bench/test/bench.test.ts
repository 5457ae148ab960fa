import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const main = fileURLToPath(new URL("../src/main.ts", import.meta.url));

/** Runs `pnpm bench <args>` as a process; expects it to succeed and returns its JSON results. */
async function bench(...args: string[]) {
  const child = spawn(process.execPath, ["--conditions=@flotilla/source", main, ...args], { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  child.stdout.on("data", (d: Buffer) => {
    out += d.toString();
  });
  child.stderr.on("data", (d: Buffer) => {
    err += d.toString();
  });
  const code = await new Promise((resolve) => child.on("exit", resolve));
  expect(code, err).toBe(0);
  return out
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l));
}

describe("pnpm bench", () => {
  it("runs the throughput scenario (--quick) for both systems and prints one JSON object per result", async () => {
    const results = await bench("throughput", "--quick");
    expect(results.map((r) => [r.scenario, r.procs])).toEqual([
      ["throughput", 1],
      ["throughput", 4],
    ]);
    for (const r of results) {
      expect(r.flotilla.tasksPerSec).toBeGreaterThan(0);
      expect(r.bullmq.tasksPerSec).toBeGreaterThan(0);
      expect(r.flotilla.commandsPerTask).toBeGreaterThan(0);
      expect(r.ratio).toBeCloseTo(r.flotilla.tasksPerSec / r.bullmq.tasksPerSec, 1);
    }
  }, 120_000);

  it("refuses an unknown scenario", async () => {
    const child = spawn(process.execPath, ["--conditions=@flotilla/source", main, "nonsense"], { stdio: "ignore" });
    expect(await new Promise((resolve) => child.on("exit", resolve))).toBe(2);
  });

  it("footprint (--quick): no per-task key is left without a TTL once every task ended", async () => {
    const [result] = await bench("footprint", "--quick");
    expect(result.scenario).toBe("footprint");
    expect(result.flotilla.perTaskKeysWithoutTtl).toBe(0);
    // The queue's lanes, index and workers' leases (one field per live consumer), and the registry: none per task.
    expect(result.flotilla.longLivedKeys).toEqual([
      "queue:{queue}",
      "queue:{queue}:high",
      "queue:{queue}:leases",
      "queue:{queue}:low",
      "queue:{queue}:tasks",
      "{fleet}:queues",
    ]);
    expect(result.flotilla.bytesPerStoredEvent).toBeGreaterThan(0);
  }, 120_000);
});
