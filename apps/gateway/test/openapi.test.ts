// The OpenAPI document serves a code generator: Redocly's recommended rules find no error in it (the
// warnings left are named below, each with its reason), every operation has an id, the graph runs'
// answers are typed, and the schemas describe every field the packages answer with (checked by the
// compiler: the type assertions below fail `pnpm typecheck` when a field or a status is left out).
// The generated client compiling strictly is the dashboard's test (apps/dashboard/test/openapi-types.test.ts).
import type { TaskResult, WatchEvent } from "@flotilla/client";
import type { GraphRunStatus, RunCancelOutcome, RunSummary } from "@flotilla/graph";
import type { z } from "@hono/zod-openapi";
import { createConfig, lintFromString } from "@redocly/openapi-core";
import { describe, expect, expectTypeOf, it } from "vitest";
import type { FleetEventDescribed } from "../src/event-schemas.ts";
import { createGateway, openApiDocument } from "../src/index.ts";
import type { AllStatusesListed, GraphRunSchema, RunCancelOutcomeSchema, RunSummarySchema } from "../src/run-schemas.ts";
import type { TaskSchema } from "../src/schemas.ts";

type Operation = { operationId?: string; security?: unknown[]; responses: Record<string, { content?: Record<string, { schema?: { $ref?: string } }> }> };
const doc = openApiDocument() as unknown as {
  servers?: unknown[];
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, unknown> };
};
const operations = Object.entries(doc.paths).flatMap(([path, methods]) =>
  Object.entries(methods).map(([method, op]) => ({ route: `${method.toUpperCase()} ${path}`, op })),
);

/**
 * Warnings of the recommended rules the document keeps, on purpose: the probes have no client error to
 * report, and no route's body is an event's data (an event stream is text), so nothing refers to those two.
 */
const ACCEPTED_WARNINGS = [
  "operation-4xx-response #/paths/~1healthz/get/responses",
  "operation-4xx-response #/paths/~1readyz/get/responses",
  "operation-4xx-response #/paths/~1metrics/get/responses",
  "no-unused-components #/components/schemas/TaskEvent",
  "no-unused-components #/components/schemas/FleetEvent",
];

describe("the OpenAPI document", () => {
  it("passes Redocly's recommended rules: no error, and only the warnings it keeps on purpose", async () => {
    const config = await createConfig({ extends: ["recommended"] });
    const problems = await lintFromString({ source: JSON.stringify(doc), absoluteRef: "openapi.json", config });
    const found = problems.map((p) => ({ severity: p.severity, id: `${p.ruleId} ${p.location[0]?.pointer ?? ""}`, message: p.message }));
    expect(found.filter((p) => p.severity === "error")).toEqual([]);
    expect(found.map((p) => p.id).sort()).toEqual([...ACCEPTED_WARNINGS].sort());
  });

  it("gives every operation an id, each its own", () => {
    const ids = operations.map(({ route, op }) => [route, op.operationId]);
    expect(ids.filter(([, id]) => id === undefined)).toEqual([]);
    expect(new Set(ids.map(([, id]) => id)).size).toBe(operations.length);
    expect(Object.fromEntries(ids)).toMatchObject({
      "POST /v1/tasks": "submitTask",
      "GET /v1/tasks/{id}": "getTask",
      "GET /v1/runs": "listRuns",
      "GET /v1/runs/{runId}": "getRun",
      "POST /v1/runs/{runId}/cancel": "cancelRun",
      "POST /v1/runs/{runId}/retry": "retryRun",
      "GET /healthz": "getHealth",
    });
  });

  it("names its server, and says the probes need no token", () => {
    expect(doc.servers).toEqual([expect.objectContaining({ url: "/" })]);
    for (const path of ["/healthz", "/readyz", "/metrics"]) expect(doc.paths[path]!.get!.security, path).toEqual([]);
    for (const { route, op } of operations.filter((o) => o.route.includes(" /v1/"))) expect(op.security, route).toEqual([{ bearer: [] }]);
  });

  it("types the graph runs' answers, and the data of each event stream's messages", () => {
    const schemaOf = (path: string) => doc.paths[path]!.get!.responses["200"]!.content!["application/json"]!.schema;
    expect(schemaOf("/v1/runs")).toEqual({ $ref: "#/components/schemas/RunPage" });
    expect(schemaOf("/v1/runs/{runId}")).toEqual({ $ref: "#/components/schemas/GraphRun" });
    const postSchemaOf = (path: string) => doc.paths[path]!.post!.responses["200"]!.content!["application/json"]!.schema;
    expect(postSchemaOf("/v1/runs/{runId}/cancel")).toEqual({ $ref: "#/components/schemas/RunCancelOutcome" });
    expect(postSchemaOf("/v1/runs/{runId}/retry")).toEqual({ $ref: "#/components/schemas/RunRetried" });
    expect(Object.keys(doc.components.schemas)).toEqual(
      expect.arrayContaining(["RunSummary", "RunPage", "GraphRun", "NodeInstance", "Graph", "TaskEvent", "FleetEvent", "JsonValue"]),
    );
    // The JSON value is written without `nullable` beside no `type` (what generators read as any).
    expect(JSON.stringify(doc.components.schemas.JsonValue)).not.toMatch(/\{"nullable":true\}/);
  });

  it("is what the gateway serves at /openapi.json", async () => {
    const gateway = createGateway({ alerts: false, redis: "redis://127.0.0.1:1" });
    try {
      expect(await (await gateway.app.request("/openapi.json")).json()).toEqual(doc);
    } finally {
      await gateway.close();
    }
  });

  it("describes every field and status the packages answer with (checked by the compiler)", () => {
    expectTypeOf<keyof z.output<typeof TaskSchema>>().toEqualTypeOf<keyof TaskResult>();
    expectTypeOf<keyof z.output<typeof RunSummarySchema>>().toEqualTypeOf<keyof RunSummary>();
    expectTypeOf<keyof z.output<typeof GraphRunSchema>>().toEqualTypeOf<keyof GraphRunStatus>();
    expectTypeOf<Omit<z.output<typeof RunCancelOutcomeSchema>, "runId">>().toEqualTypeOf<RunCancelOutcome>();
    expectTypeOf<AllStatusesListed>().toEqualTypeOf<true>();
    expectTypeOf<FleetEventDescribed>().toEqualTypeOf<true>();
    expectTypeOf<WatchEvent["type"]>().toEqualTypeOf<
      | "task.submitted"
      | "task.started"
      | "task.finished"
      | "task.status"
      | "worker.joined"
      | "worker.left"
      | "worker.state"
      | "run.started"
      | "run.finished"
      | "watch.lagged"
    >();
  });
});
