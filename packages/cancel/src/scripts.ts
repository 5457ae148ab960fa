import { LuaScript } from "@flotilla/core/redis";
import * as lua from "./generated/lua.ts";

/** The cancel package's script (lua/), built with the store's includes it is made of. */
export const scripts = { cancel: new LuaScript(lua.cancel) } as const;
