// Headless Chromium for the dashboard test: Debian's `chromium` (installed by .ci/run), driven with
// puppeteer-core, with no network beyond the service and a fresh profile each time.
import puppeteer, { type Browser, type Page } from "puppeteer-core";

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

// The page's globals, inside functions handed to page.evaluate; Deno's own types have no DOM.
declare const document: any;

/** How long one step may wait for the page. */
export const STEP_TIMEOUT_MS = 10_000;

/** The text of the first element matching `selector`. */
export function textOf(page: Page, selector: string): Promise<string> {
  return page.$eval(selector, (e: any) => e.textContent ?? "");
}

/** Waits until the status line matches `pattern`, and returns its text. */
export async function statusSays(page: Page, pattern: RegExp): Promise<string> {
  try {
    await page.waitForFunction(
      (source: string) => new RegExp(source).test(document.getElementById("status")?.textContent ?? ""),
      { timeout: STEP_TIMEOUT_MS },
      pattern.source,
    );
  } catch (error) {
    throw new Error(`The status line never matched ${pattern}: "${await textOf(page, "#status")}"`, {
      cause: error,
    });
  }
  return await textOf(page, "#status");
}

/** The balance the page shows, as a number. */
export async function shownBalance(page: Page): Promise<number> {
  return Number((await textOf(page, "#balance")).replace(/,/g, ""));
}

/** Clears the status line, so the next statusSays waits for the next message. */
export async function clearStatus(page: Page): Promise<void> {
  await page.evaluate(() => {
    document.getElementById("status").textContent = "";
  });
}

/** What axe-core found wrong, one line per rule: its impact, id, help and how many elements. */
export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: number;
}

/**
 * Runs axe-core (npm, pinned in deno.json) on the page as it is: its axe.min.js is injected from the
 * test, never served by the app. Returns every violation, whatever its impact.
 */
export async function axeViolations(page: Page): Promise<AxeViolation[]> {
  const source = await Deno.readTextFile(new URL("axe.min.js", import.meta.resolve("axe-core")));
  await page.evaluate(source);
  return await page.evaluate(async () => {
    const result = await (globalThis as any).axe.run(document, { resultTypes: ["violations"] });
    return result.violations.map((v: any) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      nodes: v.nodes.length,
    }));
  });
}

/** Presses Tab (at most `limit` times) until the element with `id` has the focus, as a keyboard user would. */
export async function tabTo(page: Page, id: string, limit = 80): Promise<void> {
  for (let i = 0; i < limit; i++) {
    if (await page.evaluate(() => document.activeElement?.id) === id) return;
    await page.keyboard.press("Tab");
  }
  throw new Error(`#${id} not reached with ${limit} presses of Tab`);
}
