// A tiny static file server for the built app (dist/). It serves the app under a base path
// (default "/"), so the end-to-end tests can check that the app works from a sub-path, as it
// does when a wiki embeds it. Usage: node scripts/static-server.mjs DIR PORT [BASE]
import { createServer } from "node:http";
import { readFile, stat } from "node:fs/promises";
import { extname, join, normalize, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const TYPES = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".wasm": "application/wasm",
  ".json": "application/json",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".gz": "application/gzip",
};

/**
 * Serves `dir` at `base` on 127.0.0.1:`port` (0 = any free port), and each of `mounts`
 * ({ "sub/path/": directory }) under `base` too (tests attach traces the way a wiki page would).
 * Resolves to { url, close }.
 */
export function serve(dir, { port = 0, base = "/", mounts = {} } = {}) {
  const roots = [...Object.entries(mounts).map(([prefix, d]) => [base + prefix, resolve(d)]), [base, resolve(dir)]];
  const server = createServer(async (req, res) => {
    const url = new URL(req.url, "http://127.0.0.1");
    const found = roots.find(([prefix]) => url.pathname.startsWith(prefix));
    if (!found) {
      res.writeHead(404).end("not found");
      return;
    }
    const [prefix, root] = found;
    let path = decodeURIComponent(url.pathname.slice(prefix.length)) || "index.html";
    if (path.endsWith("/")) path += "index.html";
    const file = normalize(join(root, path));
    if (!file.startsWith(root)) {
      res.writeHead(403).end("forbidden");
      return;
    }
    try {
      const info = await stat(file);
      if (!info.isFile()) throw new Error("not a file");
      const body = await readFile(file);
      res.writeHead(200, { "content-type": TYPES[extname(file)] || "application/octet-stream", "cache-control": "no-cache" });
      res.end(body);
    } catch {
      res.writeHead(404).end("not found");
    }
  });
  return new Promise((resolvePromise) => {
    server.listen(port, "127.0.0.1", () => {
      const { port: actual } = server.address();
      resolvePromise({ url: `http://127.0.0.1:${actual}${base}`, close: () => new Promise((r) => server.close(r)) });
    });
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [dir = "dist", port = "8080", base = "/"] = process.argv.slice(2);
  const { url } = await serve(dir, { port: Number(port), base });
  console.log(`seqskew is running at ${url}  (Ctrl-C to stop)`);
}
