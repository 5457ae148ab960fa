// Runs an example as its package script does, offline: the scripted model, no provider keys.
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

/** Runs an example offline (scripted model), as `pnpm --filter @flotilla/examples <name>` does. */
export async function runExample(name: string): Promise<{ code: number | null; out: string }> {
  const file = fileURLToPath(new URL(`../src/${name}.ts`, import.meta.url));
  const env = { ...process.env, OPENAI_API_KEY: "", ANTHROPIC_API_KEY: "", FLOTILLA_EXAMPLE_MODEL: "" };
  const child = spawn(process.execPath, ["--conditions=@flotilla/source", file], { env, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout.on("data", (d: Buffer) => {
    out += d.toString();
  });
  child.stderr.on("data", (d: Buffer) => {
    out += d.toString();
  });
  const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
  return { code, out };
}
