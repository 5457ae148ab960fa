// The gateway runs the alert rules by default: with no worker alive at all, `no_worker_alive` fires
// (even with every queue empty) and resolves when one joins; of two gateways on one fleet, one sends.
// @cluster: the alert rules read every queue's state across slots
import type { AlertEvent } from "@flotilla/client";
import { waitFor } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import { describe, expect, it } from "vitest";
import { useGateway } from "./support.ts";

const alerts = async (url: string) => (await (await fetch(`${url}/v1/alerts`)).json()) as { events: AlertEvent[]; firing: AlertEvent[] };

describe("gateway alert rules", () => {
  const env = useFlotilla("gateway-alerts");
  const gateways = useGateway(env);

  it("run by default: no_worker_alive fires with no worker at all, once for two gateways, and resolves when a worker joins", async () => {
    // The grace before no_worker_alive fires, shortened from 30 s as --alert-thresholds can.
    const alerting = { alerts: { intervalMs: 200, thresholds: { noWorkerForMs: 500 } } };
    const { url } = await gateways.start(alerting);
    await gateways.start(alerting);
    await waitFor(async () => (await alerts(url)).firing.some((e) => e.rule === "no_worker_alive"), { timeoutMs: 5000 });
    const fired = (await alerts(url)).firing.find((e) => e.rule === "no_worker_alive")!;
    expect(fired).toMatchObject({ id: "no_worker_alive:*", queue: "*", severity: "critical", state: "firing" });

    await env.worker({ queues: ["gw-alerts"] });
    await waitFor(async () => (await alerts(url)).firing.length === 0, { timeoutMs: 5000 });
    // Several rounds of two gateways: one firing and one resolved event, not one per gateway.
    await new Promise((r) => setTimeout(r, 600));
    const { events } = await alerts(url);
    expect(events.filter((e) => e.rule === "no_worker_alive").map((e) => e.state)).toEqual(["resolved", "firing"]);
  });
});

describe("gateway alert rules turned off", () => {
  const env = useFlotilla("gateway-alerts-off");
  const gateways = useGateway(env);

  it("alerts: false: nothing is evaluated (no worker alive, and no alert)", async () => {
    const { url } = await gateways.start({ alerts: false });
    await new Promise((r) => setTimeout(r, 300));
    expect(await alerts(url)).toEqual({ events: [], firing: [] });
  });
});
