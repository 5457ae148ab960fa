// The task endpoints against a real worker: the long-poll result (202 while running, 409 for a task
// that failed or was cancelled), idempotent submits, cancel, signal, retry, listing; dead letters
// and the fleet's views.
// @cluster: task listings across queues (slots) and long-poll results
import { scripted, waitFor } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import { describe, expect, it } from "vitest";
import { jsonHeaders, submitBody, taskPath, useGateway } from "./support.ts";

describe("gateway tasks", () => {
  const env = useFlotilla("gateway-tasks");
  const gateways = useGateway(env);

  const post = (url: string, path: string, body?: string, headers: Record<string, string> = {}) =>
    fetch(`${url}${path}`, { method: "POST", headers: { ...jsonHeaders(), ...headers }, ...(body !== undefined && { body }) });
  async function submit(url: string, body: string, headers: Record<string, string> = {}): Promise<string> {
    const res = await post(url, "/v1/tasks", body, headers);
    expect(res.status).toBe(201);
    const { taskId } = (await res.json()) as { taskId: string };
    expect(res.headers.get("location")).toBe(taskPath(taskId));
    return taskId;
  }

  it("long-polls a result: 202 with the status while it runs, 200 once COMPLETED", async () => {
    const { url } = await gateways.start();
    const taskId = await submit(url, submitBody(scripted("poll"), "later", { queue: "tk-poll" }));
    const pending = await fetch(`${url}${taskPath(taskId, "/result")}?timeoutMs=200`);
    expect(pending.status).toBe(202);
    expect(await pending.json()).toEqual({ taskId, status: "PENDING" });
    const record = await fetch(`${url}${taskPath(taskId)}`);
    expect(await record.json()).toMatchObject({ taskId, queue: "tk-poll", status: "PENDING", agent: "poll" });

    // Waiting when the worker starts: the same request returns the result as soon as it is there.
    const waiting = fetch(`${url}${taskPath(taskId, "/result")}?timeoutMs=20000`);
    await env.worker({ queues: ["tk-poll"] });
    const done = await waiting;
    expect(done.status).toBe(200);
    expect(await done.json()).toMatchObject({ taskId, status: "COMPLETED", result: { text: "Echo: later" } });
  });

  it("signs what it submits when given the workers' secret: a verifying worker runs it, and refuses what an unsigned gateway sends", async () => {
    const secret = "gateway-shared-secret-0001";
    await env.worker({ queues: ["tk-signed"], signingSecrets: [secret] });
    const signed = await gateways.start({ signingSecret: secret });
    const unsigned = await gateways.start();
    const good = await submit(signed.url, submitBody(scripted("s"), "signed", { queue: "tk-signed" }));
    const bad = await submit(unsigned.url, submitBody(scripted("s"), "unsigned", { queue: "tk-signed" }));
    const goodResult = await fetch(`${signed.url}${taskPath(good, "/result")}?timeoutMs=10000`);
    expect(await goodResult.json()).toMatchObject({ status: "COMPLETED", result: { text: "Echo: signed" } });
    const badResult = await fetch(`${signed.url}${taskPath(bad, "/result")}?timeoutMs=10000`);
    expect(badResult.status).toBe(409);
    expect(await badResult.json()).toMatchObject({ error: { code: "TASK_FAILED", details: { taskError: { code: "BAD_SIGNATURE" } } } });
  });

  it("a FAILED task's result is a 409 TASK_FAILED carrying its error; retry runs it again from its dead letter", async () => {
    const { url } = await gateways.start();
    await env.worker({ queues: ["tk-fail"] });
    const taskId = await submit(url, submitBody(scripted("fails", { failWith: "model exploded" }), "x", { queue: "tk-fail" }));
    const res = await fetch(`${url}${taskPath(taskId, "/result")}?timeoutMs=20000`);
    expect(res.status).toBe(409);
    const body = (await res.json()) as { error: { code: string; details: { taskError: { message: string } } } };
    expect(body.error.code).toBe("TASK_FAILED");
    expect(body.error.details.taskError.message).toContain("model exploded");

    const letters = (await (await fetch(`${url}/v1/queues/tk-fail/dead-letters`)).json()) as { deadLetters: Array<{ id: string; taskId: string }> };
    expect(letters.deadLetters.map((l) => l.taskId)).toEqual([taskId]);
    const letter = await fetch(`${url}/v1/queues/tk-fail/dead-letters/${letters.deadLetters[0]!.id}`);
    expect(await letter.json()).toMatchObject({ taskId, queue: "tk-fail" });
    expect((await fetch(`${url}/v1/queues/tk-fail/dead-letters/0-1`)).status).toBe(404);

    const retried = await post(url, taskPath(taskId, "/retry"));
    expect(retried.status).toBe(200);
    expect(await retried.json()).toEqual({ taskId });
    // It fails again (the script says so) and is dead-lettered again: purge clears it.
    await waitFor(async () => ((await (await fetch(`${url}/v1/queues/tk-fail/dead-letters`)).json()) as { deadLetters: unknown[] }).deadLetters.length === 1);
    const purged = await fetch(`${url}/v1/queues/tk-fail/dead-letters`, { method: "DELETE" });
    expect(await purged.json()).toEqual({ queue: "tk-fail", purged: 1 });
    // Nothing left to retry from.
    const again = await post(url, taskPath(taskId, "/retry"));
    expect(again.status).toBe(404);
    expect(await again.json()).toMatchObject({ error: { code: "DEAD_LETTER_NOT_FOUND" } });
  });

  it("requeues a dead letter by id", async () => {
    const { url } = await gateways.start();
    await env.worker({ queues: ["tk-requeue"] });
    const taskId = await submit(url, submitBody(scripted("fails", { failWith: "no" }), "x", { queue: "tk-requeue" }));
    await env.until(taskId);
    const { deadLetters } = (await (await fetch(`${url}/v1/queues/tk-requeue/dead-letters`)).json()) as { deadLetters: Array<{ id: string }> };
    const res = await post(url, `/v1/queues/tk-requeue/dead-letters/${deadLetters[0]!.id}/requeue`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ taskId });
    expect((await post(url, `/v1/queues/tk-requeue/dead-letters/${deadLetters[0]!.id}/requeue`)).status).toBe(404);
  });

  it("cancels a waiting task: its result is then a 409 TASK_CANCELLED", async () => {
    const { url } = await gateways.start();
    const taskId = await submit(url, submitBody(scripted("c"), "x", { queue: "tk-cancel" }));
    const res = await post(url, taskPath(taskId, "/cancel"), JSON.stringify({ reason: "changed my mind" }));
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ taskId, outcome: "cancelled" });
    const result = await fetch(`${url}${taskPath(taskId, "/result")}?timeoutMs=1000`);
    expect(result.status).toBe(409);
    expect(await result.json()).toMatchObject({ error: { code: "TASK_CANCELLED" } });
    // A body is optional.
    expect(await (await post(url, taskPath(taskId, "/cancel"))).json()).toMatchObject({ outcome: "finished", status: "CANCELLED" });
  });

  it("maps the Idempotency-Key header to options.idempotencyKey", async () => {
    const { url } = await gateways.start();
    const body = submitBody(scripted("idem"), "x", { queue: "tk-idem" });
    const first = await submit(url, body, { "Idempotency-Key": "order-42" });
    expect(await submit(url, body, { "Idempotency-Key": "order-42" })).toBe(first);
    expect(await submit(url, body, { "Idempotency-Key": "order-43" })).not.toBe(first);
    // A caller-chosen id taken already is a 409.
    const named = submitBody(scripted("idem"), "x", { queue: "tk-idem", taskId: "fixed" });
    await submit(url, named);
    const dup = await post(url, "/v1/tasks", named);
    expect(dup.status).toBe(409);
    expect(await dup.json()).toMatchObject({ error: { code: "DUPLICATE_TASK" } });
  });

  it("a signal to a task that does not wait for it is a 409 NOT_WAITING; unknown tasks are 404s", async () => {
    const { url } = await gateways.start();
    const taskId = await submit(url, submitBody(scripted("s"), "x", { queue: "tk-signal" }));
    const res = await post(url, taskPath(taskId, "/signal"), JSON.stringify({ name: "approval", payload: { approved: true } }));
    expect(res.status).toBe(409);
    expect(await res.json()).toMatchObject({ error: { code: "NOT_WAITING", details: { status: "PENDING" } } });
    const unknown = "tk-signal/nope";
    expect((await post(url, taskPath(unknown, "/signal"), JSON.stringify({ name: "approval" }))).status).toBe(404);
    expect((await post(url, taskPath(unknown, "/cancel"))).status).toBe(404);
    expect((await fetch(`${url}${taskPath(unknown)}`)).status).toBe(404);
    expect((await fetch(`${url}${taskPath(unknown, "/result")}?timeoutMs=100`)).status).toBe(404);
  });

  it("a message to a task joins its run (202, a user-message event where it did); to one that ended, 409 NOT_RUNNING", async () => {
    const { url } = await gateways.start();
    // Nobody serves its queue yet: the message waits for the run.
    const taskId = await submit(url, submitBody(scripted("m"), "x", { queue: "tk-message" }));
    const res = await post(url, taskPath(taskId, "/messages"), JSON.stringify({ message: "be brief" }));
    expect(res.status).toBe(202);
    const sent = (await res.json()) as { taskId: string; messageId: string; waiting: number };
    expect(sent).toMatchObject({ taskId, messageId: expect.any(String), waiting: 1 });
    await env.worker({ queues: ["tk-message"] });
    await waitFor(async () => ((await (await fetch(`${url}${taskPath(taskId)}`)).json()) as { status: string }).status === "COMPLETED", {
      what: "the task to end",
    });
    const joined = (await env.events(taskId)).find((e) => e.type === "user-message");
    expect(joined).toMatchObject({ messageId: sent.messageId, content: "be brief" });
    const late = await post(url, taskPath(taskId, "/messages"), JSON.stringify({ message: "too late" }));
    expect(late.status).toBe(409);
    expect(await late.json()).toMatchObject({ error: { code: "NOT_RUNNING", details: { status: "COMPLETED" } } });
    expect((await post(url, taskPath("tk-message/nope", "/messages"), JSON.stringify({ message: "hi" }))).status).toBe(404);
    const empty = await post(url, taskPath(taskId, "/messages"), JSON.stringify({ message: "" }));
    expect(empty.status).toBe(400);
    expect(await empty.json()).toMatchObject({ error: { code: "VALIDATION_ERROR", field: "message" } });
  });

  it("lists tasks by queue and status, and shows the queues, workers and alerts", async () => {
    const { url } = await gateways.start();
    const a = await submit(url, submitBody(scripted("l"), "1", { queue: "tk-list" }));
    const b = await submit(url, submitBody(scripted("l"), "2", { queue: "tk-list" }));
    const page = (await (await fetch(`${url}/v1/tasks?queue=tk-list&status=PENDING&limit=1`)).json()) as {
      tasks: Array<{ taskId: string }>;
      nextCursor: string;
    };
    expect(page.tasks.map((t) => t.taskId)).toEqual([b]);
    const next = (await (await fetch(`${url}/v1/tasks?queue=tk-list&limit=1&cursor=${encodeURIComponent(page.nextCursor)}`)).json()) as {
      tasks: Array<{ taskId: string }>;
    };
    expect(next.tasks.map((t) => t.taskId)).toEqual([a]);

    await env.worker({ queues: ["tk-list"], workerId: "gw-list-worker" });
    const workers = (await (await fetch(`${url}/v1/workers`)).json()) as { workers: Array<{ workerId: string; queues: string[] }>; live: number };
    expect(workers.workers).toContainEqual(expect.objectContaining({ workerId: "gw-list-worker", queues: ["tk-list"] }));
    const queues = (await (await fetch(`${url}/v1/queues`)).json()) as { queues: Array<{ queue: string }> };
    expect(queues.queues.map((q) => q.queue)).toContain("tk-list");
    const alerts = await fetch(`${url}/v1/alerts`);
    expect(alerts.status).toBe(200);
    expect(await alerts.json()).toEqual({ events: [], firing: [] });
  });
});
