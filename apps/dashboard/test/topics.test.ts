// The event bus pages in a real Chromium, on a real gateway, a real worker serving two subscriptions
// of a topic and a real Redis: the topics with each subscription's progress, a topic's newest events,
// a dead letter appearing on its subscription's page, republished (the fixed handler takes it) and,
// after two more, purged once the page asked.
// @single: a browser on the gateway; the bus over HTTP runs on the cluster in apps/gateway/test/topics.test.ts
import { join } from "node:path";
import { useFlotilla } from "@flotilla/testing/vitest";
import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { loadBusPackage, screenshotDir, useDashboard } from "./support.ts";

const TOPIC = "dash.orders";
const text = async (page: Page, testId: string) => (await page.getByTestId(testId).textContent()) ?? "";
const shot = (page: Page, name: string) => page.screenshot({ path: join(screenshotDir(), `${name}.png`), fullPage: true });
const cell = (page: Page, name: string, column: string) => page.locator(`tr[data-topic="${TOPIC}"][data-subscription="${name}"] td[data-col="${column}"]`);

describe("dashboard: topics", () => {
  const env = useFlotilla("dashboard-topics");
  const dash = useDashboard(env);

  it("lists topics and subscriptions, shows a dead letter as it arrives, republishes it, and purges after asking", async () => {
    const { busWorker, subscribe } = await loadBusPackage();
    // The ledger fails every event while `broken` (no retries: straight to its dead letters); the mailer takes them all.
    let broken = false;
    const ledger: unknown[] = [];
    const mailer: unknown[] = [];
    await env.worker({
      queues: ["dash-topics"],
      bus: busWorker({
        subscriptions: [
          subscribe(TOPIC, (e) => void mailer.push(e.payload), { name: "mailer" }),
          subscribe(
            TOPIC,
            (e) => {
              if (broken) throw new Error("the ledger is closed");
              ledger.push(e.payload);
            },
            { name: "ledger", maxRetries: 0 },
          ),
        ],
      }),
    });
    const publish = async (payload: unknown) => {
      const res = await dash.api(`/v1/topics/${TOPIC}/events`, { method: "POST", body: JSON.stringify({ payload }) });
      expect(res.status).toBe(201);
      return ((await res.json()) as { id: string }).id;
    };
    const first = await publish({ order: 1 });
    await expect.poll(() => ledger.length).toBe(1);

    // The topics: each subscription's progress, nothing pending or dead yet.
    const page = await dash.open("#/topics");
    await expect.poll(() => cell(page, "ledger", "dead").textContent()).toBe("0");
    expect(await cell(page, "mailer", "lag").textContent()).toBe("0");
    expect(await page.locator(`tr[data-topic="${TOPIC}"]`).first().textContent()).toContain(TOPIC);
    await shot(page, "topics");

    // The topic: its subscriptions with counts, its newest event.
    await page.locator(`a[href="#/topics/${TOPIC}"]`).click();
    await expect.poll(() => text(page, "events")).toContain('{"order":1}');
    expect(await page.locator(`tr[data-event="${first}"]`).count()).toBe(1);
    await expect.poll(() => page.locator('[data-testid="subscriptions"] tr[data-subscription]').count()).toBe(2);

    // The ledger's dead letters: none, until it fails one.
    await page.locator('[data-testid="subscriptions"] tr[data-subscription="ledger"] a').first().click();
    await page.getByTestId("bus-dl-empty").waitFor();
    broken = true;
    const failed = await publish({ order: 2 });
    const row = page.locator('[data-testid="bus-dead-letters"] tr[data-letter]');
    await expect.poll(() => row.count(), { timeout: 10_000 }).toBe(1);
    expect(await row.textContent()).toContain(failed);
    expect(await row.textContent()).toContain("the ledger is closed");
    // The topics page, opened meanwhile in another tab, counts it under the ledger only.
    const topics = await dash.open("#/topics");
    await expect.poll(() => cell(topics, "ledger", "dead").textContent(), { timeout: 10_000 }).toBe("1");
    expect([await cell(topics, "mailer", "dead").textContent(), await cell(topics, "ledger", "pending").textContent()]).toEqual(["0", "0"]);
    await topics.context().close();
    await row.getByText("Inspect").click();
    await expect.poll(() => text(page, "bus-dl-detail")).toContain('"order": 2');
    await shot(page, "bus-dead-letters");

    // Fixed, and republished: a new event, which the ledger takes this time.
    broken = false;
    await row.getByTestId("republish").click();
    await expect.poll(() => text(page, "bus-dl-outcome")).toMatch(/^Republished \S+ as event \d+-\d+$/);
    await page.getByTestId("bus-dl-empty").waitFor();
    await expect.poll(() => ledger).toEqual([{ order: 1 }, { order: 2 }]);
    // Every subscription got it again: the mailer too.
    await expect.poll(() => mailer.length).toBe(3);

    // Two more dead letters; Purge asks first, and "No" keeps them.
    broken = true;
    await publish({ order: 3 });
    await publish({ order: 4 });
    await expect.poll(() => row.count(), { timeout: 10_000 }).toBe(2);
    await page.getByTestId("purge").click();
    await expect.poll(() => page.getByTestId("purge-confirm").count()).toBe(1);
    expect(await text(page, "purge-confirm")).toContain("Delete all 2 dead letters of ledger?");
    await page.getByTestId("purge-no").click();
    expect(await row.count()).toBe(2);
    await page.getByTestId("purge").click();
    await page.getByTestId("purge-yes").click();
    await expect.poll(() => text(page, "bus-dl-outcome")).toBe("Purged 2 dead letters");
    await page.getByTestId("bus-dl-empty").waitFor();
    const left = (await (await dash.api(`/v1/topics/${TOPIC}/subscriptions/ledger/dead-letters`)).json()) as { deadLetters: unknown[] };
    expect(left.deadLetters).toEqual([]);

    // An unknown subscription says so.
    await page.goto(`${dash.url}/#/topics/${TOPIC}/nobody`);
    await expect.poll(() => page.locator('[role="alert"]').textContent()).toContain("SUBSCRIPTION_NOT_FOUND");
    await page.context().close();
  });
});
