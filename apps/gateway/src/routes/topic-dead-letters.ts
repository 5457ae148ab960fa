// A bus subscription's dead letters (@flotilla/bus's `deadLetters`): list, show, publish again,
// purge. Like every topic route they need a token for every queue; republishing and purging, like a
// queue's requeue and purge, need the admin role.
import { ErrorCodes } from "@flotilla/core";
import { createRoute } from "@hono/zod-openapi";
import { assertAllQueues, requireRole } from "../auth.ts";
import { findSubscription } from "../bus-lookups.ts";
import {
  BusDeadLetterParams,
  BusDeadLetterSchema,
  BusDeadLettersQuery,
  BusDeadLettersSchema,
  BusPurgedSchema,
  RepublishedSchema,
  RepublishRequestSchema,
  SubscriptionParams,
} from "../bus-schemas.ts";
import type { GatewayApp, GatewayDeps } from "../context.ts";
import { GatewayError } from "../errors.ts";
import { AUTH_ERRORS, error, json, jsonBody, SECURED } from "./responses.ts";

const tags = ["topics"];
const ALL_QUEUES = 'Needs a token for every queue (`queues: "*"`).';
const PATH = "/v1/topics/{topic}/subscriptions/{name}/dead-letters";
const NO_SUBSCRIPTION = { 404: error("No such topic (TOPIC_NOT_FOUND) or subscription (SUBSCRIPTION_NOT_FOUND).") } as const;
const NO_LETTER = {
  404: error("No such topic (TOPIC_NOT_FOUND), subscription (SUBSCRIPTION_NOT_FOUND) or dead letter (DEAD_LETTER_NOT_FOUND)."),
} as const;

const list = createRoute({
  operationId: "listSubscriptionDeadLetters",
  method: "get",
  path: PATH,
  tags,
  summary: "A subscription's dead letters, oldest first",
  description: ALL_QUEUES,
  middleware: [requireRole("read")] as const,
  ...SECURED,
  request: { params: SubscriptionParams, query: BusDeadLettersQuery },
  responses: { 200: json("A page of dead letters; pass the last id as `after` for the next.", BusDeadLettersSchema), ...AUTH_ERRORS, ...NO_SUBSCRIPTION },
});

const get = createRoute({
  operationId: "getSubscriptionDeadLetter",
  method: "get",
  path: `${PATH}/{id}`,
  tags,
  summary: "One dead letter of a subscription",
  description: `The event, why it is here, after how many deliveries, the last error. ${ALL_QUEUES}`,
  middleware: [requireRole("read")] as const,
  ...SECURED,
  request: { params: BusDeadLetterParams },
  responses: { 200: json("The dead letter.", BusDeadLetterSchema), ...AUTH_ERRORS, ...NO_LETTER },
});

const republish = createRoute({
  operationId: "republishSubscriptionDeadLetters",
  method: "post",
  path: `${PATH}/republish`,
  tags,
  summary: "Publish dead-lettered events again",
  description: `Each one becomes a new event of the topic (every subscription gets it) and leaves the dead letters; those given in \`ids\`, or every one. An id that is not there is a 404 DEAD_LETTER_NOT_FOUND, with the ones published all the same in \`error.details.republished\`. ${ALL_QUEUES}`,
  middleware: [requireRole("admin")] as const,
  ...SECURED,
  request: { params: SubscriptionParams, body: jsonBody(RepublishRequestSchema, false) },
  responses: { 200: json("The new events' ids, by dead letter id.", RepublishedSchema), ...AUTH_ERRORS, ...NO_LETTER },
});

const purge = createRoute({
  operationId: "purgeSubscriptionDeadLetters",
  method: "delete",
  path: PATH,
  tags,
  summary: "Delete every dead letter of a subscription",
  description: ALL_QUEUES,
  middleware: [requireRole("admin")] as const,
  ...SECURED,
  request: { params: SubscriptionParams },
  responses: { 200: json("How many there were.", BusPurgedSchema), ...AUTH_ERRORS, ...NO_SUBSCRIPTION },
});

export function registerTopicDeadLetterRoutes(app: GatewayApp, { bus }: GatewayDeps): void {
  app.openapi(list, async (c) => {
    assertAllQueues(c);
    const { topic, name } = c.req.valid("param");
    const { limit, after } = c.req.valid("query");
    const b = await bus();
    await findSubscription(b, topic, name);
    const deadLetters = await b.deadLetters.list(topic, name, { limit: limit ?? 100, ...(after !== undefined && { after }) });
    return c.json({ topic, subscription: name, deadLetters }, 200);
  });

  app.openapi(get, async (c) => {
    assertAllQueues(c);
    const { topic, name, id } = c.req.valid("param");
    const b = await bus();
    await findSubscription(b, topic, name);
    const letter = await b.deadLetters.get(topic, name, id);
    if (!letter) throw new GatewayError(ErrorCodes.DEAD_LETTER_NOT_FOUND, `no dead letter ${id} of subscription "${name}" on topic "${topic}"`);
    return c.json(letter, 200);
  });

  app.openapi(republish, async (c) => {
    assertAllQueues(c);
    const { topic, name } = c.req.valid("param");
    const { ids } = c.req.valid("json");
    const b = await bus();
    await findSubscription(b, topic, name);
    return c.json({ topic, subscription: name, republished: await b.deadLetters.republish(topic, name, ids) }, 200);
  });

  app.openapi(purge, async (c) => {
    assertAllQueues(c);
    const { topic, name } = c.req.valid("param");
    const b = await bus();
    await findSubscription(b, topic, name);
    return c.json({ topic, subscription: name, purged: await b.deadLetters.purge(topic, name) }, 200);
  });
}
