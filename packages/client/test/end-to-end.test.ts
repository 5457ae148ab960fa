// @cluster: submit, worker, result and stream: the whole path on a cluster
import { echo } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import { describe, expect, it } from "vitest";
import type { FlotillaEvent } from "../src/index.ts";

describe("submit → worker → result and stream", () => {
  const env = useFlotilla("e2e");

  it("runs a task and streams its events in order, ending with the terminal status", async () => {
    const client = env.client();
    await env.worker();
    const handle = await client.submit(echo(), "hello fleet", { detailed: true });
    const events: FlotillaEvent[] = [];
    for await (const e of handle.stream()) events.push(e);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect(events[0]).toMatchObject({ type: "status", status: "running", attempt: 1, agent: "echo" });
    expect(events.at(-1)).toMatchObject({ type: "status", status: "completed" });
    const text = events.flatMap((e) => (e.type === "text" ? [e.delta] : [])).join("");
    expect(text).toBe("Echo: hello fleet");
    expect(events.some((e) => e.type === "step")).toBe(true);
    const result = await handle.result();
    expect(result).toMatchObject({ text: "Echo: hello fleet", steps: 1 });
    const status = await handle.status();
    expect(status).toMatchObject({ status: "COMPLETED", attempt: 1, queue: "default" });
    expect(status.waitMs).toBeGreaterThanOrEqual(0);
    expect(status.durationMs).toBeGreaterThanOrEqual(0);
  });
});
