// @flotilla/agent/effects: the tool loop's effects as building blocks, for executors that run them
// somewhere else than run.stream (the Temporal activities): one model turn, one tool call, the
// tool definitions a turn offers, and the check of a final answer against its output schema.
export { parseOutput } from "./output.ts";
export type { SignalOutcome, ToolCall, ToolOutput } from "./steps.ts";
export { approvalGate, lookupTool, type ProgressEvent, resolveTools, runToolCall, type ToolCallContext, toolDefinitions } from "./tool.ts";
export { modelTurn, type TurnRequest, type TurnResult } from "./turn.ts";
