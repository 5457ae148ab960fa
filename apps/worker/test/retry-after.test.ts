// @serial: bounds how late a request may leave after a 429 (50 ms): other files' load would widen it past what this file's own load does
// @cluster: three processes share one limit's pause through its slot's sharded channel
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Agent } from "@flotilla/agent";
import { afterAll, describe, expect, it } from "vitest";
import { useModelFleet } from "./spawn-app.ts";

// A provider's 429 with `retry-after: 3` reaches one of three flotilla-worker processes that draw on
// one fleet-wide limit of 100 requests a second: from 50 ms after it reached that worker, no request
// leaves any of them until the 3 s are over. Timed in the workers (fixtures/fetch-timed-module.ts):
// when each request left, and when the 429 arrived. A process keeping one core busy loads the
// machine meanwhile. The 429's body comes 200 ms after its headers: a pause that waited for the
// provider to read it and throw (as it did before) let 18 to 23 requests through, up to 257 ms after.
const fleet = useModelFleet("app-retry-after");
const dir = mkdtempSync(join(tmpdir(), "flotilla-retry-after-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A process that keeps one core busy until killed. */
function burnCore(): ChildProcess {
  return fleet.spawned(spawn(process.execPath, ["-e", "for (;;) {}"], { stdio: "ignore" }));
}

/** What the workers' fetches logged: when requests left, when 429s arrived (ms, wall clock). */
function fetchLog(files: string[]): { sends: number[]; throttled: number[] } {
  const lines = files.flatMap((f) => readFileSync(f, "utf8").split("\n").filter(Boolean));
  const at = (kind: string) => lines.filter((l) => l.startsWith(`${kind} `)).map((l) => Number(l.slice(kind.length + 1)));
  return { sends: at("send"), throttled: at("429") };
}

describe("a provider's Retry-After across the fleet", () => {
  it("3 processes, 100 calls, one 429 (retry-after: 3): from 50 ms after it reached a worker, none sends until the 3 s are over", async () => {
    const { client, server } = fleet;
    let n = 0;
    // The 429's body comes 200 ms after its headers: the pause must not wait for it.
    server.fallback = () => (++n === 40 ? { status: 429, message: "slow down", headers: { "retry-after": "3" }, bodyDelayMs: 200 } : { text: "ok" });
    const logs = [0, 1, 2].map((i) => join(dir, `fetch-${i}.log`));
    await fleet.start("fetch-timed-module.ts", "app-ra", (i) => ({ FLOTILLA_TEST_FETCH_LOG: logs[i]! }));
    const burner = burnCore();
    try {
      // "fast": 100 requests a second across the fleet, so a pause that lands late lets several through.
      const agent = new Agent({ name: "limited", model: "local:m", rateLimit: "fast" });
      const handles = await client.submitMany(Array.from({ length: 100 }, (_, i) => ({ agent, input: `call ${i}` })));
      await Promise.all(handles.map((h) => h.result({ timeoutMs: 60_000 })));
    } finally {
      burner.kill("SIGKILL");
    }
    const { sends, throttled } = fetchLog(logs);
    expect(sends).toHaveLength(101); // 100 calls and the one retried after its 429
    expect(throttled).toHaveLength(1);
    const late = sends.map((t) => t - throttled[0]!).filter((ms) => ms > 50 && ms < 3000);
    expect(late).toEqual([]);
  }, 90_000);
});
