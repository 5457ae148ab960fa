import { flotillaProject } from "./vitest/preset.ts";

export default flotillaProject("tooling");
