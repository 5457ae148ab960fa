// @flotilla/agent: defining agents, swarms and tools, and running them in process. What a durable
// executor builds on is in "@flotilla/agent/effects" (a model turn, a tool call) and
// "@flotilla/agent/loop" (the tool loop as a pure driver, importable from workflow code).

// Thrown from a tool or a model to fail the task at once: re-exported so a tool needs no @flotilla/core.
// Human in the loop: what a tool's wait throws, and what a run that stopped to wait throws.
export { TaskSuspended, UnrecoverableError, type WaitOptions, type WaitRequest } from "@flotilla/core";
export { Agent, type AgentConfig } from "./agent.ts";
export type { InboxMessage } from "./loop.ts";
export {
  KNOWN_PROVIDERS,
  type KnownProvider,
  type LanguageModel,
  ModelResolver,
  type ModelResolverOptions,
  type OpenAICompatibleEndpoint,
  type ProviderFactory,
} from "./model.ts";
export { providerFetch } from "./provider-fetch.ts";
export { type RunOptions, type RunResult, run } from "./run.ts";
export { type Script, ScriptSchema, scriptedModel } from "./scripted.ts";
export { HANDOFF_TOOL } from "./steps.ts";
export { Swarm, type SwarmConfig } from "./swarm.ts";
export { type ApprovalOptions, defineTool, type ProgressEvent, type Tool, type ToolContext, type ToolRegistry } from "./tool.ts";
