import { LuaScript } from "@flotilla/core/redis";
import * as lua from "./generated/lua.ts";

/** The broker's scripts (lua/), built with their includes expanded. */
export const scripts = {
  deadLetter: new LuaScript(lua.deadLetter),
  promote: new LuaScript(lua.promote),
  renew: new LuaScript(lua.renew),
} as const;
