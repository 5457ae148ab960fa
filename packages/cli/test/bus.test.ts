// `flotilla bus …`: a topic's subscriptions and events, publishing by hand, and a subscription's dead
// letters, against a real worker serving the subscriptions.
// @single: the CLI's bus commands call @flotilla/bus's readers, which run on the cluster in packages/bus
import type { BusDeadLetter, GroupInfo } from "@flotilla/bus";
import { busWorker, subscribe } from "@flotilla/bus";
import { UnrecoverableError } from "@flotilla/core";
import { waitFor } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import { describe, expect, it } from "vitest";
import { flotilla, json } from "./cli.ts";

describe("flotilla bus", () => {
  const env = useFlotilla("cli-bus");

  it("publish, topics, stats, groups and inspect; a subscription's dead letters listed, shown, republished and purged", async () => {
    const handled: unknown[] = [];
    await env.worker({
      queues: ["cli-bus"],
      bus: busWorker({
        subscriptions: [
          subscribe("orders.created", async (e) => void handled.push(e.payload), { name: "mailer" }),
          subscribe(
            "orders.created",
            () => {
              throw new UnrecoverableError("the ledger is closed");
            },
            { name: "ledger" },
          ),
        ],
      }),
    });
    const published = await flotilla(env.prefix, ["bus", "publish", "orders.created", '{"order":42}']);
    expect(published.code, published.stderr).toBe(0);
    const eventId = published.stdout.trim();
    expect(eventId).toMatch(/^\d+-\d+$/);
    await waitFor(async () => handled.length === 1);

    expect(await json(env.prefix, ["bus", "topics"])).toEqual({ topics: ["orders.created"] });
    const { groups } = await json<{ groups: GroupInfo[] }>(env.prefix, ["bus", "groups", "orders.created"]);
    expect(groups.map((g) => g.name).sort()).toEqual(["ledger", "mailer"]);
    const table = await flotilla(env.prefix, ["bus", "groups", "orders.created"]);
    expect(table.stdout).toMatch(/^SUBSCRIPTION\s+CONSUMERS\s+PENDING\s+LAG\s+RETRYING\s+DEAD$/m);
    const stats = await flotilla(env.prefix, ["bus", "stats"]);
    expect(stats.stdout).toMatch(/^orders\.created\s+1\s+1\s+2$/m);
    const inspected = await flotilla(env.prefix, ["bus", "inspect", "orders.created"]);
    expect(inspected.stdout).toContain(eventId);
    expect(inspected.stdout).toContain('{"order":42}');

    const letters = await waitFor(async () => {
      const { deadLetters } = await json<{ deadLetters: BusDeadLetter[] }>(env.prefix, ["bus", "dlq", "list", "orders.created", "ledger"]);
      return deadLetters.length === 1 ? deadLetters : undefined;
    });
    expect(letters[0]).toMatchObject({ eventId, subscription: "ledger", reason: "UNRECOVERABLE" });
    const shown = await flotilla(env.prefix, ["bus", "dlq", "show", "orders.created", "ledger", letters[0]!.id]);
    expect(shown.stdout).toMatch(/^error:\s+\[UNRECOVERABLE\] the ledger is closed$/m);
    expect(shown.stdout).toMatch(/^payload:\s+\{"order":42\}$/m);
    const missing = await flotilla(env.prefix, ["bus", "dlq", "show", "orders.created", "ledger", "0-1"]);
    expect([missing.code, missing.stderr.trim()]).toEqual([1, 'error: no dead letter 0-1 of subscription "ledger" on topic "orders.created"']);

    const republished = await flotilla(env.prefix, ["bus", "dlq", "republish", "orders.created", "ledger"]);
    expect([republished.code, republished.stdout.trim()]).toEqual([0, "republished 1 event for ledger"]);
    // Published again as a new event of the topic: the mailer gets it too, the ledger fails it again.
    await waitFor(async () => handled.length === 2);
    await waitFor(
      async () => (await json<{ deadLetters: unknown[] }>(env.prefix, ["bus", "dlq", "list", "orders.created", "ledger"])).deadLetters.length === 1,
    );
    expect(await json(env.prefix, ["bus", "dlq", "purge", "orders.created", "ledger"])).toEqual({ topic: "orders.created", subscription: "ledger", purged: 1 });
    const bad = await flotilla(env.prefix, ["bus", "publish", "orders.created", "{not json"]);
    expect(bad.code).toBe(2);
  });

  it("subscriptions: which live workers serve each subscription; one no worker serves is flagged", async () => {
    const worker = await env.worker({
      queues: ["cli-bus-subs"],
      workerId: "cli-bus-server",
      bus: busWorker({ subscriptions: [subscribe("invoices.paid", async () => {}, { name: "books" })] }),
    });
    const { subscriptions } = await json<{ subscriptions: Array<{ topic: string; name: string; workers: string[]; group?: GroupInfo }> }>(env.prefix, [
      "bus",
      "subscriptions",
      "invoices.paid",
    ]);
    expect(subscriptions).toMatchObject([{ topic: "invoices.paid", name: "books", workers: ["cli-bus-server"], group: { name: "books" } }]);
    const served = await flotilla(env.prefix, ["bus", "subscriptions"]);
    expect(served.stdout).toMatch(/^TOPIC\s+SUBSCRIPTION\s+WORKERS\s+PENDING\s+LAG\s+DEAD$/m);
    expect(served.stdout).toMatch(/^invoices\.paid\s+books\s+cli-bus-server\s+0\s+0\s+0$/m);

    await env.stopWorkers({ workers: [worker] });
    const orphaned = await flotilla(env.prefix, ["bus", "subscriptions", "invoices.paid"]);
    expect(orphaned.stdout).toMatch(/^invoices\.paid\s+books\s+no live worker\s+0/m);
  });
});
