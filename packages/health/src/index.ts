export { countLiveWorkers, deadAfter, type FleetStatus, type FleetStatusOptions, getFleetStatus, type WorkerStatus } from "./fleet.ts";
export { Heartbeat, type HeartbeatOptions } from "./heartbeat.ts";
export { type NotReady, NotReadySchema, type WorkerRecord, WorkerRecordSchema, type WorkerState, WorkerStateSchema } from "./schema.ts";
