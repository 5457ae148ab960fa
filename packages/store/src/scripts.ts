import { LuaScript } from "@flotilla/core/redis";
import * as lua from "./generated/lua.ts";

/** The store's scripts (lua/), built with their includes expanded. */
export const scripts = {
  create: new LuaScript(lua.create),
  claim: new LuaScript(lua.claim),
  start: new LuaScript(lua.start),
  settle: new LuaScript(lua.settle),
  requeue: new LuaScript(lua.requeue),
  publish: new LuaScript(lua.publish),
  failCorrupt: new LuaScript(lua.failCorrupt),
  signal: new LuaScript(lua.signal),
  sendMessage: new LuaScript(lua.sendMessage),
  takeMessages: new LuaScript(lua.takeMessages),
} as const;
