// Cancelling and retrying graph runs over HTTP: the answers, a refused retry as a 400 carrying the
// run's status, an unknown run as a 404, the body checked strictly, and the roles the task routes need.
// @cluster: a run's cancel and retry move its node tasks in their queues' slots and the run in its own
import { defineNode, graphWorker } from "@flotilla/graph";
import { waitFor } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import { describe, expect, it } from "vitest";
import { RunCancelOutcomeSchema, RunRetriedSchema } from "../src/run-schemas.ts";
import { jsonHeaders, useGateway } from "./support.ts";

const ADMIN = "admin-token-0123456789";
const SUBMIT = "submit-token-0123456789";
const READER = "reader-token-0123456789";
const LIMITED = "limited-token-0123456789";
const TOKENS = [
  { token: ADMIN, role: "admin" as const, queues: "*" as const },
  { token: SUBMIT, role: "submit" as const, queues: "*" as const },
  { token: READER, role: "read" as const, queues: "*" as const },
  { token: LIMITED, role: "admin" as const, queues: ["q1"] },
];

interface ErrorBody {
  error: { code: string; field?: string; details?: Record<string, unknown> };
}

describe("gateway: cancel and retry a graph run", () => {
  const env = useFlotilla("gateway-run-control");
  const gateways = useGateway(env);
  const post = (url: string, path: string, token: string, body?: unknown) =>
    fetch(`${url}${path}`, { method: "POST", headers: jsonHeaders(token), ...(body !== undefined && { body: JSON.stringify(body) }) });
  const getRun = async (url: string, runId: string) =>
    (await (await fetch(`${url}/v1/runs/${runId}`, { headers: jsonHeaders(READER) })).json()) as {
      status: string;
      error?: { message: string };
      nodes: Array<{ node: string; status: string }>;
    };
  /** A run whose node type no worker serves: it stays RUNNING, its first node QUEUED. */
  async function waitingRun(url: string): Promise<string> {
    const graph = { name: "gw-control", nodes: [{ id: "only", type: "gw-control-nobody" }] };
    const res = await post(url, "/v1/runs", ADMIN, { graph, input: "go" });
    expect(res.status).toBe(201);
    return ((await res.json()) as { runId: string }).runId;
  }

  it("cancels a running run (submit role): 200 cancelled; again, finished; an unknown run is a 404; the body is strict", async () => {
    const { url } = await gateways.start({ tokens: TOKENS });
    const runId = await waitingRun(url);
    // A reader may not cancel, nor a token limited to some queues (a run's nodes are on many).
    expect((await post(url, `/v1/runs/${runId}/cancel`, READER)).status).toBe(403);
    expect((await post(url, `/v1/runs/${runId}/cancel`, LIMITED)).status).toBe(403);
    const extra = await post(url, `/v1/runs/${runId}/cancel`, SUBMIT, { reason: "enough", force: true });
    expect(extra.status).toBe(400);
    expect(((await extra.json()) as ErrorBody).error).toMatchObject({ code: "VALIDATION_ERROR" });
    expect((await getRun(url, runId)).status).toBe("RUNNING");

    const res = await post(url, `/v1/runs/${runId}/cancel`, SUBMIT, { reason: "enough" });
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body).toEqual({ runId, outcome: "cancelled", status: "CANCELLED" });
    expect(RunCancelOutcomeSchema.safeParse(body).error).toBeUndefined();
    const run = await getRun(url, runId);
    expect(run.status).toBe("CANCELLED");
    expect(run.nodes).toEqual([expect.objectContaining({ node: "only", status: "CANCELLED" })]);
    expect(run.error?.message).toContain("enough");

    // Ended: nothing changes, and the answer says how it had ended. A body is optional.
    const again = await post(url, `/v1/runs/${runId}/cancel`, SUBMIT);
    expect([again.status, await again.json()]).toEqual([200, { runId, outcome: "finished", status: "CANCELLED" }]);
    const unknown = await post(url, "/v1/runs/nope/cancel", SUBMIT);
    expect([unknown.status, ((await unknown.json()) as ErrorBody).error.code]).toEqual([404, "RUN_NOT_FOUND"]);
  });

  it("retries a FAILED or CANCELLED run (admin role): 200 RUNNING; a RUNNING or SUCCEEDED run is a 400 with its status; an unknown one a 404", async () => {
    let calls = 0;
    await env.worker({
      graph: graphWorker({
        nodes: [
          defineNode({
            type: "gw-flaky",
            execute: (input: string) => {
              calls++;
              if (calls === 1) throw new Error("first call fails");
              return { echoed: input };
            },
          }),
        ],
      }),
    });
    const { url } = await gateways.start({ tokens: TOKENS });
    const graph = { name: "gw-retry", nodes: [{ id: "flaky", type: "gw-flaky", retry: { maxRetries: 0 } }] };
    const started = await post(url, "/v1/runs", ADMIN, { graph, input: "hi" });
    const { runId } = (await started.json()) as { runId: string };
    await waitFor(async () => (await getRun(url, runId)).status === "FAILED", { what: "the run to fail" });

    // Retry needs the admin role, as a task's does.
    expect((await post(url, `/v1/runs/${runId}/retry`, SUBMIT)).status).toBe(403);
    expect((await post(url, `/v1/runs/${runId}/retry`, LIMITED)).status).toBe(403);
    const retried = await post(url, `/v1/runs/${runId}/retry`, ADMIN);
    expect(retried.status).toBe(200);
    const body = await retried.json();
    expect(body).toEqual({ runId, status: "RUNNING" });
    expect(RunRetriedSchema.safeParse(body).error).toBeUndefined();
    await waitFor(async () => (await getRun(url, runId)).status === "SUCCEEDED", { what: "the retried run to succeed" });
    expect(calls).toBe(2);

    // Refused: a SUCCEEDED run, and a RUNNING one; the error carries the run's status.
    const refused = await post(url, `/v1/runs/${runId}/retry`, ADMIN);
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as ErrorBody).error).toMatchObject({ code: "VALIDATION_ERROR", field: "runId", details: { status: "SUCCEEDED" } });
    const waiting = await waitingRun(url);
    const running = await post(url, `/v1/runs/${waiting}/retry`, ADMIN);
    expect([running.status, ((await running.json()) as ErrorBody).error]).toEqual([
      400,
      expect.objectContaining({ code: "VALIDATION_ERROR", field: "runId", details: expect.objectContaining({ status: "RUNNING" }) }),
    ]);
    // A CANCELLED run resumes: its node is queued again.
    expect((await post(url, `/v1/runs/${waiting}/cancel`, ADMIN)).status).toBe(200);
    expect(await (await post(url, `/v1/runs/${waiting}/retry`, ADMIN)).json()).toEqual({ runId: waiting, status: "RUNNING" });
    expect(await getRun(url, waiting)).toMatchObject({ status: "RUNNING", nodes: expect.arrayContaining([expect.objectContaining({ status: "QUEUED" })]) });

    const unknown = await post(url, "/v1/runs/nope/retry", ADMIN);
    expect([unknown.status, ((await unknown.json()) as ErrorBody).error.code]).toEqual([404, "RUN_NOT_FOUND"]);
  });
});
