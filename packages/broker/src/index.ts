export { Broker, type BrokerOptions, isMissingGroup, type QueueDepth } from "./broker.ts";
export { type DeadLetter, type DeadLetterInput, parseDeadLetter } from "./dead-letters.ts";
export { type Lane, type ParsedEntry, parseEntry, QueueEntryFieldsSchema, type RawEntry } from "./entry.ts";
export { delayedKeys, LANE_ORDER, laneKeys, laneNumber, laneOf, laneOrderArg } from "./lanes.ts";
