import { FlotillaError } from "@flotilla/core";

/** A test server (redis-server, the Temporal dev server) could not be started. */
export class TestServerError extends FlotillaError {
  constructor(message: string, cause?: unknown) {
    super("TEST_SERVER_FAILED", message, { cause });
  }
}
