// Shared set-up for end-to-end tests and the in-browser benchmark: Debian's Chromium driven by
// playwright-core, and a guard that fails on any request beyond the app's own static assets.
import { chromium } from "playwright-core";

export const CHROMIUM_ARGS = [
  "--headless=new",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--disable-dev-shm-usage",
];

export async function launch() {
  return chromium.launch({ executablePath: process.env.CHROMIUM || "/usr/bin/chromium", args: CHROMIUM_ARGS });
}

/**
 * A context whose every request is recorded; anything that is not a GET of a file under
 * `appUrl` (same origin, same base path) is aborted and reported in `violations`.
 */
export async function guardedContext(browser, appUrl, options = {}) {
  const context = await browser.newContext({ viewport: { width: 1400, height: 1000 }, ...options });
  const app = new URL(appUrl);
  const requests = [];
  const violations = [];
  await context.route("**/*", (route) => {
    const request = route.request();
    const url = new URL(request.url());
    requests.push(`${request.method()} ${request.url()}`);
    const ownAsset = url.origin === app.origin && url.pathname.startsWith(app.pathname) && request.method() === "GET";
    const local = url.protocol === "data:" || url.protocol === "blob:";
    if (ownAsset || local) return route.continue();
    violations.push(`${request.method()} ${request.url()}`);
    return route.abort("blockedbyclient");
  });
  return { context, requests, violations };
}
