export { type BuilderNode, GraphBuilder } from "./builder.ts";
export { type CompiledGraph, type CompiledNode, compileGraph } from "./compile.ts";
export {
  type BranchFailure,
  BranchFailureSchema,
  type Graph,
  type GraphInput,
  type GraphNode,
  type GraphNodeInput,
  GraphNodeSchema,
  GraphSchema,
  NodeIdSchema,
  NodeTypeSchema,
  queueOfNode,
  queueOfType,
  RunIdSchema,
  type UnitePolicy,
} from "./definition.ts";
export { GraphEngine, type HandOff, type NodeEnd, type NodeResult } from "./engine.ts";
export { RunNotFoundError, RunNotRetryableError } from "./errors.ts";
export { GraphClient, type GraphClientOptions, type SharedConnections, type StartGraphOptions, StartGraphOptionsSchema } from "./graph-client.ts";
export { type AgentLike, type GraphNodeExecution, GraphWorker, type GraphWorkerOptions, graphWorker } from "./graph-worker.ts";
export { type ImportOptions, importSeedGraph, type SeedGraph, SeedGraphSchema } from "./importer.ts";
export { type Instance, instanceKey, parseInstance } from "./instances.ts";
export { defineNode, type NodeContext, type NodeDefinition, type Router } from "./node.ts";
export { type GraphRunEvent, GraphRunHandle, type GraphRunStatus, type NodeInstanceStatus, type NodeStatus, type RunCancelOutcome } from "./run-handle.ts";
export { type ListRunsOptions, ListRunsOptionsSchema, type RunPage } from "./run-list.ts";
export type { NodeState, RunError, RunRecord, RunStatus, RunSummary } from "./run-store.ts";
export { type GraphStreamEvent, isNodeEvent, type NodeStreamEvent } from "./run-stream.ts";
export { GraphTemplates } from "./templates.ts";
