// The in-process runner (in-process.ts) holds a run to what a process would show: what its code
// writes past the streams it was given is its output, and what it leaves open or changes in the
// process fails it. Each case does one of these on purpose, on a socket of its own (no Redis).
import { once } from "node:events";
import { type AddressInfo, connect, createServer, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { likeAProcess } from "./in-process.ts";

function sinks() {
  const out = { stdout: "", stderr: "" };
  return {
    out,
    stdout: (text: string) => {
      out.stdout += text;
    },
    stderr: (text: string) => {
      out.stderr += text;
    },
  };
}

describe("an in-process run, held to what a process would show", () => {
  const server = createServer();
  const accepted = new Set<Socket>();
  let port = 0;
  beforeAll(async () => {
    server.on("connection", (socket) => accepted.add(socket.on("error", () => {})));
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    for (const socket of accepted) socket.destroy();
    server.close();
    await once(server, "close");
  });

  async function connected(): Promise<Socket> {
    const socket = connect(port, "127.0.0.1");
    await once(socket, "connect");
    return socket;
  }

  it("resolves with the run's result once what it opened is closed", async () => {
    const s = sinks();
    const result = await likeAProcess("tidy", s, async () => {
      const socket = await connected();
      socket.end();
      await once(socket, "close");
      clearTimeout(setTimeout(() => {}, 60_000));
      // A timer that fires soon, and one that keeps nothing alive, are not left open.
      setTimeout(() => {}, 50);
      setTimeout(() => {}, 60_000).unref();
      return 7;
    });
    expect(result).toBe(7);
    expect(s.out).toEqual({ stdout: "", stderr: "" });
  });

  it("fails a run that leaves a connection open, or a timer keeping the process alive, naming it", async () => {
    let socket: Socket | undefined;
    await expect(
      likeAProcess(
        "flotilla leaky",
        sinks(),
        async () => {
          socket = await connected();
        },
        200,
      ),
    ).rejects.toThrow("flotilla leaky left open after it ended: TCPWRAP");
    socket!.destroy();
    let timer: NodeJS.Timeout | undefined;
    await expect(
      likeAProcess(
        "flotilla ticking",
        sinks(),
        async () => {
          timer = setTimeout(() => {}, 60_000);
        },
        200,
      ),
    ).rejects.toThrow("flotilla ticking left open after it ended: Timeout");
    clearTimeout(timer);
  });

  it("fails a run that changes process.env, process.exitCode or the process's listeners", async () => {
    const listener = () => {};
    const changes: Array<[string, () => void, () => void]> = [
      [
        "env",
        () => {
          process.env.FLOTILLA_CLI_IN_PROCESS_TEST = "1";
        },
        () => {
          delete process.env.FLOTILLA_CLI_IN_PROCESS_TEST;
        },
      ],
      [
        "exitCode",
        () => {
          process.exitCode = 3;
        },
        () => {
          process.exitCode = undefined;
        },
      ],
      ["listeners", () => process.on("beforeExit", listener), () => process.off("beforeExit", listener)],
    ];
    for (const [what, change, undo] of changes) {
      try {
        await expect(
          likeAProcess(`flotilla ${what}`, sinks(), async () => change()),
          what,
        ).rejects.toThrow(`flotilla ${what} changed the process's state`);
      } finally {
        undo();
      }
    }
  });

  it("takes what its code writes to the console and to the process's streams as its output, and nothing from outside it", async () => {
    const log = console.log;
    const write = process.stdout.write;
    const s = sinks();
    let release: () => void = () => {};
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const running = likeAProcess("flotilla chatty", s, async () => {
      console.log("a %d", 1);
      console.info("b");
      console.warn("c");
      console.error("d");
      process.stdout.write("e");
      await new Promise((resolve) => process.stderr.write("f", resolve));
      await released;
      process.stdout.write(Buffer.from("g"));
    });
    // Written meanwhile outside the run: the test's, not the run's.
    console.log("(written by the test while a run is under way: not the run's output)");
    release();
    await running;
    expect(s.out).toEqual({ stdout: "a 1\nb\neg", stderr: "c\nd\nf" });
    // Put back once no run is under way.
    expect(console.log).toBe(log);
    expect(process.stdout.write).toBe(write);
  });
});
