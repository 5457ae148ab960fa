// Exits 0 when a Redis answers PING at the URL given, 1 otherwise; no dependencies needed.
import net from "node:net";

const url = new URL(process.argv[2] ?? "redis://127.0.0.1:6379");
const socket = net.connect({ host: url.hostname || "127.0.0.1", port: Number(url.port || 6379) });
const done = (code) => {
  socket.destroy();
  process.exit(code);
};
socket.setTimeout(1000, () => done(1));
socket.on("error", () => done(1));
socket.on("connect", () => {
  const auth = url.password ? `AUTH ${decodeURIComponent(url.username || "default")} ${decodeURIComponent(url.password)}\r\n` : "";
  socket.write(`${auth}PING\r\n`);
});
socket.on("data", (d) => done(d.toString().includes("PONG") ? 0 : 1));
