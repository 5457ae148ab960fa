// A task waiting for a human, answered from its page in a real Chromium: a tool call that needs
// approval is approved (the tool runs) or rejected (it does not), and a tool's own signal is sent
// with a JSON payload.
import { defineTool } from "@flotilla/agent";
import { scripted } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { taskHash, useDashboard } from "./support.ts";

const status = (page: Page) => page.getByTestId("task-status").getAttribute("data-status");

describe("dashboard: a task waiting for a human", () => {
  const env = useFlotilla("dashboard-waiting");
  const dash = useDashboard(env);
  const sent: string[] = [];
  const sendEmail = defineTool({
    name: "dash_send_email",
    description: "sends an e-mail",
    inputSchema: z.object({ to: z.string() }),
    approval: true,
    execute: (args) => {
      sent.push(args.to);
      return `sent to ${args.to}`;
    },
  });
  const askColour = defineTool({
    name: "dash_ask_colour",
    description: "asks a person for a colour",
    inputSchema: z.object({}),
    execute: async (_args, ctx) => JSON.stringify(await ctx.waitForSignal("colour", { request: { question: "which colour?" } })),
  });

  it("approve runs the tool; reject does not", async () => {
    await env.worker({ queues: ["dash-wait"], tools: [sendEmail] });
    const submit = (to: string) =>
      env.submit(scripted("mailer", { reply: "done", toolCalls: [{ name: "dash_send_email", args: { to } }] }, { tools: ["dash_send_email"] }), "mail", {
        queue: "dash-wait",
      });
    for (const [to, button, after] of [
      ["yes@example.com", "approve", "approved"],
      ["no@example.com", "reject", "rejected"],
    ] as const) {
      const taskId = await submit(to);
      const page = await dash.open(taskHash(taskId));
      await expect.poll(() => status(page), { timeout: 15_000 }).toBe("WAITING");
      const panel = page.getByTestId("waiting");
      expect(await panel.getAttribute("data-kind")).toBe("approval");
      expect(await panel.textContent()).toContain("dash_send_email");
      expect(await panel.textContent()).toContain(to);
      await page.getByTestId("reason").fill(`from the ${button} test`);
      await page.getByTestId(button).click();
      await expect.poll(() => page.getByTestId("action-result").textContent()).toBe(after);
      await expect.poll(() => status(page), { timeout: 15_000 }).toBe("COMPLETED");
      await page.context().close();
    }
    expect(sent).toEqual(["yes@example.com"]);
  });

  it("sends a tool's own signal with its JSON payload; a payload that is not JSON is refused here", async () => {
    await env.worker({ queues: ["dash-signal"], tools: [askColour] });
    const taskId = await env.submit(
      scripted("asker", { reply: "thanks", toolCalls: [{ name: "dash_ask_colour", args: {} }] }, { tools: ["dash_ask_colour"] }),
      "ask",
      {
        queue: "dash-signal",
      },
    );
    const page = await dash.open(taskHash(taskId));
    await expect.poll(() => status(page), { timeout: 15_000 }).toBe("WAITING");
    expect(await page.getByTestId("waiting").getAttribute("data-kind")).toBe("signal");
    expect(await page.getByTestId("waiting").textContent()).toContain("which colour?");
    await page.getByTestId("payload").fill("{not json");
    await page.getByTestId("send-signal").click();
    await expect.poll(() => page.getByTestId("action-result").textContent()).toBe("the payload is not JSON");
    await page.getByTestId("payload").fill('{"colour":"teal"}');
    await page.getByTestId("send-signal").click();
    await expect.poll(() => status(page), { timeout: 15_000 }).toBe("COMPLETED");
    const events = (await (await dash.api(`/v1/tasks/${encodeURIComponent(taskId)}`)).json()) as { status: string };
    expect(events.status).toBe("COMPLETED");
    await page.context().close();
  });
});
