// `vite build` turns index.html and src/ into dist/, which the gateway serves with `--dashboard-dir`.
// `vite` (dev) proxies the API to a gateway on 127.0.0.1:8080 (FLOTILLA_GATEWAY_URL to change it).
import { defineConfig } from "vite";

export default defineConfig({
  root: import.meta.dirname,
  // Relative asset paths: the page works wherever the folder is served.
  base: "./",
  build: { outDir: "dist", emptyOutDir: true, target: "es2022" },
  server: { proxy: { "/v1": process.env.FLOTILLA_GATEWAY_URL ?? "http://127.0.0.1:8080" } },
});
