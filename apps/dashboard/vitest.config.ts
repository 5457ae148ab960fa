import { flotillaProject } from "@flotilla/tooling/vitest";

export default flotillaProject("dashboard");
