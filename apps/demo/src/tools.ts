// The tools the demo's workers register (passed to flotilla-worker with --module).
import { defineTool } from "@flotilla/agent";
import { z } from "zod";

const FORECASTS: Record<string, string> = { lisbon: "sunny, 24°C", oslo: "snow, -3°C", lagos: "humid, 31°C" };

export const tools = [
  defineTool({
    name: "weather",
    description: "Today's forecast for a city",
    inputSchema: z.object({ city: z.string() }),
    execute: ({ city }) => FORECASTS[city.toLowerCase()] ?? "no forecast",
  }),
  defineTool({
    name: "wordcount",
    description: "Counts the words of a text",
    inputSchema: z.object({ text: z.string() }),
    execute: ({ text }) => text.split(/\s+/).filter(Boolean).length,
  }),
];
