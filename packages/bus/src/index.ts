// @flotilla/bus: a topic event bus on Redis Streams. See README.md.
export { Bus, type BusOptions, type RequestOptions } from "./bus.ts";
export { agentTaskName, BusWorker, type BusWorkerOptions, type BusWorkerStart, busWorker } from "./bus-worker.ts";
export { type BusDeadLetter, BusDeadLetters } from "./dead-letters.ts";
export { type BusEvent, MalformedEventError } from "./event.ts";
export type { PublishItem } from "./publisher.ts";
export type { GroupCounts, GroupInfo, InspectedEvent, TopicStats } from "./readers.ts";
export {
  type BusTuning,
  FromSchema,
  type PublishOptions,
  PublishOptionsSchema,
  type SubscribeOptions,
  SubscribeOptionsSchema,
  SubscriptionNameSchema,
  TopicNameSchema,
} from "./schemas.ts";
export { type Handler, type HandlerContext, type Subscription, subscribe, subscriptionId } from "./subscription.ts";
export {
  SIGNATURE_HEADER,
  type SubscriptionSecrets,
  signWebhook,
  TIMESTAMP_HEADER,
  verifyWebhook,
  WEBHOOK_SUBSCRIPTION,
  WEBHOOK_TOPIC,
  type WebhookDelivery,
  type WebhookOptions,
  type WebhookSecret,
  webhookHandler,
} from "./webhooks.ts";
