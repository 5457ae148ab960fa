import { ErrorCodes, isTerminal, type JsonValue, splitTaskId, TaskCancelledError, TaskFailedError, ValidationError, WaitTimeoutError } from "@flotilla/core";
import { createRoute } from "@hono/zod-openapi";
import { assertQueue, readTaskScope, requireRole } from "../auth.ts";
import type { GatewayApp, GatewayDeps } from "../context.ts";
import { GatewayError, GatewayErrorCodes } from "../errors.ts";
import { jsonDepthGuard } from "../json-depth-guard.ts";
import {
  CancelRequestSchema,
  CancelResponseSchema,
  ListTasksQuery,
  MessageRequestSchema,
  MessageResponseSchema,
  PendingResultSchema,
  ResultQuery,
  ResultSchema,
  SignalRequestSchema,
  SignalResponseSchema,
  SubmitHeaders,
  SubmitRequestSchema,
  TaskIdParams,
  TaskPageSchema,
  TaskRefSchema,
  TaskSchema,
} from "../schemas.ts";
import { AUTH_ERRORS, error, json, jsonBody, NOT_FOUND, SECURED } from "./responses.ts";

const tags = ["tasks"];

const submit = createRoute({
  operationId: "submitTask",
  method: "post",
  path: "/v1/tasks",
  tags,
  summary: "Submit an agent run",
  description: "Validates and records the task (PENDING), then enqueues it. The `Idempotency-Key` header sets `options.idempotencyKey`.",
  middleware: [requireRole("submit"), jsonDepthGuard] as const,
  ...SECURED,
  request: { body: jsonBody(SubmitRequestSchema), headers: SubmitHeaders },
  responses: {
    201: json("Submitted (or, for a repeated idempotency key, the first submit's task).", TaskRefSchema),
    ...AUTH_ERRORS,
    409: error("A task with the chosen `options.taskId` exists already (DUPLICATE_TASK)."),
    413: error("The body is over the gateway's limit."),
  },
});

const getTask = createRoute({
  operationId: "getTask",
  method: "get",
  path: "/v1/tasks/{id}",
  tags,
  summary: "A task's record",
  middleware: [requireRole("read", readTaskScope)] as const,
  ...SECURED,
  request: { params: TaskIdParams },
  responses: { 200: json("The task's record now.", TaskSchema), ...AUTH_ERRORS, ...NOT_FOUND },
});

const listTasks = createRoute({
  operationId: "listTasks",
  method: "get",
  path: "/v1/tasks",
  tags,
  summary: "List tasks, newest first",
  description: "A token limited to some queues must name one of them in `queue`.",
  middleware: [requireRole("read")] as const,
  ...SECURED,
  request: { query: ListTasksQuery },
  responses: { 200: json("A page of tasks; pass `nextCursor` back as `cursor` for the next one.", TaskPageSchema), ...AUTH_ERRORS },
});

const result = createRoute({
  operationId: "getTaskResult",
  method: "get",
  path: "/v1/tasks/{id}/result",
  tags,
  summary: "Wait for a task's result (long poll)",
  description:
    "Waits up to `timeoutMs` for the task to end. COMPLETED: 200 with its result. FAILED or CANCELLED: 409 with code TASK_FAILED or TASK_CANCELLED and the task's recorded error in `error.details.taskError`. Still running when the wait ends: 202 with its status; ask again.",
  middleware: [requireRole("read", readTaskScope)] as const,
  ...SECURED,
  request: { params: TaskIdParams, query: ResultQuery },
  responses: {
    200: json("The task COMPLETED.", ResultSchema),
    202: json("The task had not ended when the wait ran out.", PendingResultSchema),
    ...AUTH_ERRORS,
    ...NOT_FOUND,
    409: error("The task ended FAILED (TASK_FAILED) or CANCELLED (TASK_CANCELLED)."),
  },
});

const cancel = createRoute({
  operationId: "cancelTask",
  method: "post",
  path: "/v1/tasks/{id}/cancel",
  tags,
  summary: "Cancel a task",
  middleware: [requireRole("submit"), jsonDepthGuard] as const,
  ...SECURED,
  request: { params: TaskIdParams, body: jsonBody(CancelRequestSchema, false) },
  responses: { 200: json("What the cancel did.", CancelResponseSchema), ...AUTH_ERRORS, ...NOT_FOUND },
});

const signal = createRoute({
  operationId: "signalTask",
  method: "post",
  path: "/v1/tasks/{id}/signal",
  tags,
  summary: "Send a signal to a WAITING task",
  description: "Resumes a task waiting for signal `name` (an approval: `{ approved: true }`). Taken once.",
  middleware: [requireRole("submit"), jsonDepthGuard] as const,
  ...SECURED,
  request: { params: TaskIdParams, body: jsonBody(SignalRequestSchema) },
  responses: {
    200: json("Delivered: the task resumes on a worker.", SignalResponseSchema),
    ...AUTH_ERRORS,
    ...NOT_FOUND,
    409: error("The task does not wait for this signal (NOT_WAITING)."),
  },
});

const message = createRoute({
  operationId: "sendTaskMessage",
  method: "post",
  path: "/v1/tasks/{id}/messages",
  tags,
  summary: "Tell a running agent something",
  description:
    "The message waits in the task's own slot and joins the agent's conversation at its next turn boundary (after the model call under way and its tool calls); the task's event stream carries a `user-message` event where it joined. A PENDING or WAITING task gets it when it runs again.",
  middleware: [requireRole("submit"), jsonDepthGuard] as const,
  ...SECURED,
  request: { params: TaskIdParams, body: jsonBody(MessageRequestSchema) },
  responses: {
    202: json("Taken: it joins at the run's next turn boundary.", MessageResponseSchema),
    ...AUTH_ERRORS,
    ...NOT_FOUND,
    409: error("The task has ended (NOT_RUNNING): nothing was written."),
    413: error("The body is over the gateway's limit."),
  },
});

const retry = createRoute({
  operationId: "retryTask",
  method: "post",
  path: "/v1/tasks/{id}/retry",
  tags,
  summary: "Run a FAILED task again",
  description: "Re-queues the task's dead letter: the task goes back to PENDING with its retries reset.",
  middleware: [requireRole("admin")] as const,
  ...SECURED,
  request: { params: TaskIdParams },
  responses: { 200: json("Re-queued.", TaskRefSchema), ...AUTH_ERRORS, ...NOT_FOUND },
});

export function registerTaskRoutes(app: GatewayApp, { client, options }: GatewayDeps): void {
  app.openapi(submit, async (c) => {
    // The raw JSON, not the schema's output: the client validates it again and fills in its own defaults.
    const body = (await c.req.json()) as { agent: never; input: never; options?: Record<string, unknown> };
    const headerKey = c.req.valid("header")["idempotency-key"];
    const submitOptions = { ...body.options };
    if (headerKey !== undefined) {
      if (submitOptions.idempotencyKey !== undefined && submitOptions.idempotencyKey !== headerKey) {
        throw ValidationError.of("header", "Idempotency-Key", "differs from options.idempotencyKey; give one of them");
      }
      submitOptions.idempotencyKey = headerKey;
    }
    assertQueue(c, typeof submitOptions.queue === "string" ? submitOptions.queue : "default");
    const handle = await client.submit(body.agent, body.input, submitOptions);
    c.header("Location", `/v1/tasks/${encodeURIComponent(handle.taskId)}`);
    return c.json({ taskId: handle.taskId }, 201);
  });

  app.openapi(getTask, async (c) => {
    const { id } = c.req.valid("param");
    assertQueue(c, splitTaskId(id).queue);
    return c.json(await client.handle(id).status(), 200);
  });

  app.openapi(listTasks, async (c) => {
    const query = c.req.valid("query");
    const principal = c.get("principal");
    if (query.queue !== undefined) assertQueue(c, query.queue);
    else if (principal.queues !== "*") throw new GatewayError(GatewayErrorCodes.FORBIDDEN, "this token is limited to some queues: name one in ?queue=");
    const page = await client.listTasks(query);
    return c.json({ tasks: page.tasks, ...(page.nextCursor !== undefined && { nextCursor: page.nextCursor }) }, 200);
  });

  app.openapi(result, async (c) => {
    const { id } = c.req.valid("param");
    assertQueue(c, splitTaskId(id).queue);
    const timeoutMs = c.req.valid("query").timeoutMs ?? options.resultTimeoutMs;
    if (timeoutMs > options.maxResultTimeoutMs) throw ValidationError.of("query", "timeoutMs", `is at most ${options.maxResultTimeoutMs}`);
    const handle = client.handle(id);
    try {
      // The request's signal: a caller that hangs up stops the wait.
      const value = await handle.result({ timeoutMs, signal: c.req.raw.signal });
      return c.json({ taskId: id, status: "COMPLETED" as const, result: value as JsonValue }, 200);
    } catch (err) {
      if (!(err instanceof WaitTimeoutError)) throw err;
      const record = await handle.status();
      // Ended in the instant between the timeout and this read: answer as if the wait had seen it.
      if (isTerminal(record.status)) {
        if (record.status === "COMPLETED") return c.json({ taskId: id, status: "COMPLETED" as const, result: record.result ?? null }, 200);
        const taskError = record.error ?? { message: record.status.toLowerCase(), code: record.status };
        throw record.status === "FAILED" ? new TaskFailedError(id, taskError) : new TaskCancelledError(id, taskError);
      }
      return c.json({ taskId: id, status: record.status }, 202);
    }
  });

  app.openapi(cancel, async (c) => {
    const { id } = c.req.valid("param");
    assertQueue(c, splitTaskId(id).queue);
    const { reason } = c.req.valid("json");
    const outcome = await client.handle(id).cancel(reason);
    // "missing" is thrown as TaskNotFoundError by the client; narrowed here for the response's type.
    if (outcome.outcome === "missing") throw new GatewayError(ErrorCodes.TASK_NOT_FOUND, `no task with id "${id}"`);
    return c.json({ taskId: id, outcome: outcome.outcome, ...(outcome.status && { status: outcome.status }) }, 200);
  });

  app.openapi(signal, async (c) => {
    const { id } = c.req.valid("param");
    assertQueue(c, splitTaskId(id).queue);
    const { name, payload } = c.req.valid("json");
    await client.handle(id).signal(name, payload ?? null);
    return c.json({ taskId: id, signal: name }, 200);
  });

  app.openapi(message, async (c) => {
    const { id } = c.req.valid("param");
    assertQueue(c, splitTaskId(id).queue);
    const sent = await client.handle(id).send(c.req.valid("json").message);
    return c.json({ taskId: id, ...sent }, 202);
  });

  app.openapi(retry, async (c) => {
    const { id } = c.req.valid("param");
    assertQueue(c, splitTaskId(id).queue);
    const handle = await client.handle(id).retry();
    return c.json({ taskId: handle.taskId }, 200);
  });
}
