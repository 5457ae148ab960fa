import { LuaScript } from "@flotilla/core/redis";
import * as lua from "./generated/lua.ts";

/** The bus's scripts (lua/): each works in one topic's slot. */
export const scripts = {
  publish: new LuaScript(lua.publish),
  ack: new LuaScript(lua.ack),
  fail: new LuaScript(lua.fail),
  renew: new LuaScript(lua.renew),
  reclaim: new LuaScript(lua.reclaim),
  republish: new LuaScript(lua.republish),
  deleteGroup: new LuaScript(lua.deleteGroup),
  trim: new LuaScript(lua.trim),
  pruneConsumers: new LuaScript(lua.pruneConsumers),
} as const;
