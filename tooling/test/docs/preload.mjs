// Loaded before a README program the docs test runs as a service (`node --import`): says on file
// descriptor 3 when the program has added its SIGTERM handler (after adding it: the test signals it
// as soon as it reads this), so the test stops it only once it can stop.
import { writeSync } from "node:fs";

let told = false;
for (const method of ["on", "once", "addListener", "prependListener", "prependOnceListener"]) {
  const original = process[method];
  process[method] = function (event, listener) {
    const result = original.call(this, event, listener);
    if (event === "SIGTERM" && !told) {
      told = true;
      try {
        writeSync(3, "sigterm-handler\n");
      } catch {
        // Not run by the docs test (no descriptor 3): nothing to tell.
      }
    }
    return result;
  };
}
