import { DeadLetterNotFoundError } from "@flotilla/core";
import { createRoute } from "@hono/zod-openapi";
import { assertQueue, requireRole } from "../auth.ts";
import type { GatewayApp, GatewayDeps } from "../context.ts";
import { DeadLetterParams, DeadLetterSchema, DeadLettersQuery, DeadLettersSchema, PurgedSchema, QueueParams, TaskRefSchema } from "../schemas.ts";
import { AUTH_ERRORS, json, NOT_FOUND, SECURED } from "./responses.ts";

const tags = ["dead letters"];

const list = createRoute({
  operationId: "listDeadLetters",
  method: "get",
  path: "/v1/queues/{queue}/dead-letters",
  tags,
  summary: "A queue's dead letters, oldest first",
  middleware: [requireRole("read")] as const,
  ...SECURED,
  request: { params: QueueParams, query: DeadLettersQuery },
  responses: { 200: json("A page of dead letters; pass the last id as `after` for the next.", DeadLettersSchema), ...AUTH_ERRORS },
});

const get = createRoute({
  operationId: "getDeadLetter",
  method: "get",
  path: "/v1/queues/{queue}/dead-letters/{id}",
  tags,
  summary: "One dead letter",
  middleware: [requireRole("read")] as const,
  ...SECURED,
  request: { params: DeadLetterParams },
  responses: { 200: json("The dead letter.", DeadLetterSchema), ...AUTH_ERRORS, ...NOT_FOUND },
});

const requeue = createRoute({
  operationId: "requeueDeadLetter",
  method: "post",
  path: "/v1/queues/{queue}/dead-letters/{id}/requeue",
  tags,
  summary: "Run a dead-lettered task again",
  description: "The task goes back to PENDING with its retries reset; the dead letter is removed.",
  middleware: [requireRole("admin")] as const,
  ...SECURED,
  request: { params: DeadLetterParams },
  responses: { 200: json("Re-queued.", TaskRefSchema), ...AUTH_ERRORS, ...NOT_FOUND },
});

const purge = createRoute({
  operationId: "purgeDeadLetters",
  method: "delete",
  path: "/v1/queues/{queue}/dead-letters",
  tags,
  summary: "Delete every dead letter of a queue",
  description: "Their tasks' FAILED records stay.",
  middleware: [requireRole("admin")] as const,
  ...SECURED,
  request: { params: QueueParams },
  responses: { 200: json("How many there were.", PurgedSchema), ...AUTH_ERRORS },
});

export function registerDeadLetterRoutes(app: GatewayApp, { client }: GatewayDeps): void {
  app.openapi(list, async (c) => {
    const { queue } = c.req.valid("param");
    assertQueue(c, queue);
    const { count, after } = c.req.valid("query");
    const deadLetters = await client.deadLetters.list(queue, { ...(count !== undefined && { count }), ...(after !== undefined && { after }) });
    return c.json({ deadLetters }, 200);
  });

  app.openapi(get, async (c) => {
    const { queue, id } = c.req.valid("param");
    assertQueue(c, queue);
    const letter = await client.deadLetters.get(queue, id);
    if (!letter) throw new DeadLetterNotFoundError(queue, id);
    return c.json(letter, 200);
  });

  app.openapi(requeue, async (c) => {
    const { queue, id } = c.req.valid("param");
    assertQueue(c, queue);
    const handle = await client.deadLetters.requeue(queue, id);
    return c.json({ taskId: handle.taskId }, 200);
  });

  app.openapi(purge, async (c) => {
    const { queue } = c.req.valid("param");
    assertQueue(c, queue);
    return c.json({ queue, purged: await client.deadLetters.purge(queue) }, 200);
  });
}
