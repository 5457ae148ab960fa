// Reading the event bus (@flotilla/bus): its topics with their figures, one topic's subscriptions
// (lag, pending, retrying, dead letters), a topic's newest events. Topics span queues, so these need
// a token for every queue, as publishing does.
import { createRoute } from "@hono/zod-openapi";
import { assertAllQueues, requireRole } from "../auth.ts";
import { assertTopic } from "../bus-lookups.ts";
import { BusTopicParams, InspectedEventsSchema, InspectQuery, TopicStatsSchema, TopicsSchema } from "../bus-schemas.ts";
import type { GatewayApp, GatewayDeps } from "../context.ts";
import { AUTH_ERRORS, error, json, SECURED } from "./responses.ts";

const tags = ["topics"];
const ALL_QUEUES = 'Needs a token for every queue (`queues: "*"`): a topic\'s subscribers are on many.';
const TOPIC_NOT_FOUND = { 404: error("No such topic (TOPIC_NOT_FOUND): nothing was published to it or subscribed.") } as const;

const list = createRoute({
  operationId: "listTopics",
  method: "get",
  path: "/v1/topics",
  tags,
  summary: "Every topic with its figures and subscriptions",
  description: `Topics published to or subscribed, sorted (the bus's own \`_\` topics left out). ${ALL_QUEUES}`,
  middleware: [requireRole("read")] as const,
  ...SECURED,
  responses: { 200: json("Per topic: events held and published, and each subscription's progress.", TopicsSchema), ...AUTH_ERRORS },
});

const stats = createRoute({
  operationId: "getTopic",
  method: "get",
  path: "/v1/topics/{topic}",
  tags,
  summary: "A topic's figures and subscriptions",
  description: `Each subscription (consumer group): consumers, pending, lag, retrying, dead letters, counts. ${ALL_QUEUES}`,
  middleware: [requireRole("read")] as const,
  ...SECURED,
  request: { params: BusTopicParams },
  responses: { 200: json("The topic's figures.", TopicStatsSchema), ...AUTH_ERRORS, ...TOPIC_NOT_FOUND },
});

const inspect = createRoute({
  operationId: "listTopicEvents",
  method: "get",
  path: "/v1/topics/{topic}/events",
  tags,
  summary: "A topic's newest events",
  description: `Newest first; an entry the bus cannot read is shown as it is, with why (\`malformed\`). ${ALL_QUEUES}`,
  middleware: [requireRole("read")] as const,
  ...SECURED,
  request: { params: BusTopicParams, query: InspectQuery },
  responses: { 200: json("The events.", InspectedEventsSchema), ...AUTH_ERRORS, ...TOPIC_NOT_FOUND },
});

export function registerTopicRoutes(app: GatewayApp, { bus }: GatewayDeps): void {
  app.openapi(list, async (c) => {
    assertAllQueues(c);
    return c.json({ topics: await (await bus()).stats() }, 200);
  });

  app.openapi(stats, async (c) => {
    assertAllQueues(c);
    const { topic } = c.req.valid("param");
    const b = await bus();
    await assertTopic(b, topic);
    const [figures] = await b.stats(topic); // one topic asked for: one answer
    return c.json(figures!, 200);
  });

  app.openapi(inspect, async (c) => {
    assertAllQueues(c);
    const { topic } = c.req.valid("param");
    const { limit } = c.req.valid("query");
    const b = await bus();
    await assertTopic(b, topic);
    return c.json({ topic, events: await b.inspect(topic, { limit: limit ?? 20 }) }, 200);
  });
}
