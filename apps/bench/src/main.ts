// pnpm bench [scenario...] [--quick | --smoke]: Flotilla and BullMQ side by side on a private Redis; one JSON object per result.
import { parseArgs } from "node:util";
import { startRedisServer } from "@flotilla/testing";
import { scenarios } from "./scenarios.ts";

const { values, positionals } = parseArgs({ allowPositionals: true, options: { quick: { type: "boolean" }, smoke: { type: "boolean" } } });
const size = values.smoke ? "smoke" : values.quick ? "quick" : "full";
const names = positionals.length ? positionals : Object.keys(scenarios);
for (const name of names) {
  if (!(name in scenarios)) {
    process.stderr.write(`unknown scenario "${name}"; choose from: ${Object.keys(scenarios).join(", ")}\n`);
    process.exit(2);
  }
}
// A Redis of its own: no other load, no persistence, the same for both systems.
const server = await startRedisServer({ aof: false });
try {
  for (const name of names) {
    for (const result of await scenarios[name as keyof typeof scenarios]({ url: server.url, quick: size !== "full", size })) {
      process.stdout.write(`${JSON.stringify(result)}\n`);
    }
  }
} finally {
  await server.stop();
}
process.exit(0);
