import { LuaScript } from "@flotilla/core/redis";
import * as lua from "./generated/lua.ts";

/** The rate limit's scripts (lua/), one key each: the limit's buckets. */
export const scripts = {
  acquire: new LuaScript(lua.acquire),
  account: new LuaScript(lua.account),
  pause: new LuaScript(lua.pause),
} as const;
