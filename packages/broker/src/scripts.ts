import { LuaScript } from "@flotilla/core/redis";
import * as lua from "./generated/lua.ts";

/** The broker's scripts (lua/), built with their includes expanded. */
export const scripts = {
  deadLetter: new LuaScript(lua.deadLetter),
  makeGroups: new LuaScript(lua.makeGroups),
  promote: new LuaScript(lua.promote),
  pruneConsumers: new LuaScript(lua.pruneConsumers),
  reclaim: new LuaScript(lua.reclaim),
  release: new LuaScript(lua.release),
  renew: new LuaScript(lua.renew),
} as const;
