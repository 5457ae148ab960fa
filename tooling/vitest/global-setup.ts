// Runs once before any test: builds every package's Lua (src/generated/lua.ts) from its lua/ folder,
// so tests always run the scripts as they are on disk.
import { buildPackage, luaPackages } from "../lua/build.mjs";

export default function setup(): void {
  for (const dir of luaPackages()) buildPackage(dir);
}
