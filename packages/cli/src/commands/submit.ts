// `flotilla submit`: an agent (a JSON file, or --agent and --model) on an input; prints the task id.
import { readFile } from "node:fs/promises";
import type { AgentLike, JsonValue, SubmitOptions } from "@flotilla/client";
import { type Command, Option } from "commander";
import { integer, oneOf, PRIORITIES } from "../args.ts";
import type { Context } from "../context.ts";
import { CliError, EXIT, UsageError } from "../errors.ts";
import { followTask } from "./stream.ts";

interface SubmitFlags {
  agent?: string;
  model?: string;
  instructions?: string;
  inputJson?: boolean;
  queue?: string;
  priority?: (typeof PRIORITIES)[number];
  maxRetries?: number;
  timeout?: number;
  id?: string;
  follow?: boolean;
}

export function registerSubmit(program: Command, ctx: Context): void {
  program
    .command("submit")
    .description("submit an agent run and print its task id: `submit <agent.json> <input>` or `submit --agent <name> --model <model> <input>`")
    .argument("[agent.json]", "the agent as JSON (an Agent's toJSON(), or { name, model, ... }); leave out with --agent")
    .argument("[input]", "the input: text, or JSON with --input-json")
    .option("--agent <name>", "the agent's name (a worker that registers it runs its own definition)")
    .option("--model <model>", "with --agent: its model (provider:model)")
    .option("--instructions <text>", "with --agent: its instructions")
    .option("--input-json", "read the input as JSON rather than text")
    .option("-q, --queue <queue>", "the queue (default: default)")
    .addOption(new Option("--priority <lane>", `its lane (${PRIORITIES.join(", ")})`).argParser(oneOf(PRIORITIES)))
    .addOption(new Option("--max-retries <n>", "retries after a failed attempt").argParser(integer(0, 100)))
    .addOption(new Option("--timeout <ms>", "per-attempt timeout").argParser(integer(1)))
    .option("--id <name>", "the task's name in its queue (default: a new id)")
    .option("-f, --follow", "then stream it until it ends, as `flotilla stream` does")
    .action(
      ctx.action(async (first: string | undefined, second: string | undefined, flags: SubmitFlags) => {
        const { agent, input } = await readSubmission(first, second, flags);
        const options: SubmitOptions = {
          ...(flags.queue !== undefined && { queue: flags.queue }),
          ...(flags.priority !== undefined && { priority: flags.priority }),
          ...(flags.maxRetries !== undefined && { maxRetries: flags.maxRetries }),
          ...(flags.timeout !== undefined && { timeoutMs: flags.timeout }),
          ...(flags.id !== undefined && { taskId: flags.id }),
        };
        const handle = await ctx.client().submit(agent, input, options);
        if (!flags.follow) {
          if (ctx.json) ctx.printJson({ taskId: handle.taskId });
          else ctx.print(`${handle.taskId}\n`);
          return EXIT.OK;
        }
        // Followed: the id first (under --json as a line shaped like the events that follow), then its events.
        if (ctx.json) ctx.printJson({ type: "submitted", taskId: handle.taskId });
        else ctx.note(ctx.ce.dim(`submitted ${handle.taskId}`));
        return followTask(ctx, handle.taskId, 0);
      }),
    );
}

/** The agent and input the positional arguments and flags give. */
async function readSubmission(first: string | undefined, second: string | undefined, flags: SubmitFlags): Promise<{ agent: AgentLike; input: JsonValue }> {
  let agent: AgentLike;
  let inputText: string | undefined;
  if (flags.agent !== undefined) {
    if (flags.model === undefined) throw new UsageError("--agent needs --model (or give the agent as a JSON file instead)");
    if (second !== undefined) throw new UsageError("give the agent as a JSON file or with --agent, not both");
    agent = { name: flags.agent, model: flags.model, ...(flags.instructions !== undefined && { instructions: flags.instructions }) };
    inputText = first;
  } else {
    if (flags.model !== undefined || flags.instructions !== undefined) throw new UsageError("--model and --instructions go with --agent");
    if (first === undefined) throw new UsageError("missing the agent: a JSON file, or --agent <name> --model <model>");
    agent = await readAgentFile(first);
    inputText = second;
  }
  if (inputText === undefined) throw new UsageError("missing the input");
  if (!flags.inputJson) return { agent, input: inputText };
  try {
    return { agent, input: JSON.parse(inputText) as JsonValue };
  } catch (err) {
    throw new UsageError(`--input-json: the input is not JSON: ${(err as Error).message}`);
  }
}

async function readAgentFile(path: string): Promise<AgentLike> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (err) {
    throw new CliError("AGENT_FILE", `cannot read the agent ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  try {
    return JSON.parse(text) as AgentLike;
  } catch (err) {
    throw new CliError("AGENT_FILE", `the agent ${path} is not JSON: ${(err as Error).message}`);
  }
}
