export {
  type EventSource,
  parseEvent,
  readEvents,
  type StoredEvents,
  type StreamEventsOptions,
  streamEvents,
} from "./event-stream.ts";
export { EventPublisher, type PublisherOptions } from "./publisher.ts";
export {
  type AgentEvent,
  CustomEventSchema,
  ErrorEventSchema,
  type EventOf,
  type EventStatus,
  EventStatusSchema,
  type EventType,
  type FlotillaEvent,
  FlotillaEventSchema,
  HandoffEventSchema,
  isTerminalEvent,
  keepsEvent,
  ProgressEventSchema,
  StatusEventSchema,
  StepEventSchema,
  TextEventSchema,
  ToolCallEventSchema,
  ToolResultEventSchema,
  type Usage,
  UsageEventSchema,
  UsageSchema,
  UserMessageEventSchema,
} from "./schema.ts";
export { type StatusEvent, StatusFeed, type StatusFeedOptions, type StatusListener } from "./status-feed.ts";
