import { LuaScript } from "@flotilla/core/redis";
import * as lua from "./generated/lua.ts";

/** The graph package's scripts (lua/): each works in one slot, a run's, or (closeTask) a node task's queue's. */
export const scripts = {
  startRun: new LuaScript(lua.startRun),
  advance: new LuaScript(lua.advance),
  cancelRun: new LuaScript(lua.cancelRun),
  retryRun: new LuaScript(lua.retryRun),
  saveTemplate: new LuaScript(lua.saveTemplate),
  closeTask: new LuaScript(lua.closeTask),
} as const;
