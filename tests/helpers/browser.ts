// Headless Chromium for the dashboard test: Debian's `chromium` (installed by .ci/run), driven with
// puppeteer-core, with no network beyond the service and a fresh profile each time.
import puppeteer, { type Browser } from "puppeteer-core";

/** The Chromium binary: CHROMIUM_PATH, else `chromium` on the PATH (where Debian puts it). */
export function findChromium(): string | undefined {
  const given = Deno.env.get("CHROMIUM_PATH");
  const onPath = (Deno.env.get("PATH") ?? "").split(":").filter(Boolean)
    .flatMap((dir) => [`${dir}/chromium`, `${dir}/chromium-browser`]);
  for (const path of given ? [given] : onPath) {
    try {
      if (Deno.statSync(path).isFile) return path;
    } catch { /* not there */ }
  }
  return undefined;
}

export interface HeadlessBrowser {
  browser: Browser;
  close(): Promise<void>;
}

export async function launchChromium(executablePath: string): Promise<HeadlessBrowser> {
  const profile = await Deno.makeTempDir({ prefix: "chromium-profile-" });
  const browser = await puppeteer.launch({
    executablePath,
    headless: true,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      `--user-data-dir=${profile}`,
    ],
  });
  return {
    browser,
    async close() {
      await browser.close();
      await Deno.remove(profile, { recursive: true }).catch(() => {});
    },
  };
}
