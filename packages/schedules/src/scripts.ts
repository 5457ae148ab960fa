import { LuaScript } from "@flotilla/core/redis";
import * as lua from "./generated/lua.ts";

/** The schedules' scripts (lua/): each works in the `{schedules}` slot, on a schedule and the due set. */
export const scripts = {
  upsert: new LuaScript(lua.upsertSchedule),
  takeDue: new LuaScript(lua.takeDue),
  advance: new LuaScript(lua.advanceSchedule),
  pause: new LuaScript(lua.pauseSchedule),
  resume: new LuaScript(lua.resumeSchedule),
  remove: new LuaScript(lua.deleteSchedule),
  forgetOrphan: new LuaScript(lua.forgetOrphan),
} as const;
