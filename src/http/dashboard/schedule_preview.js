// @ts-check
/// <reference lib="dom" />
// The new schedule's next 5 runs in its zone, from the server's own rules (GET /schedule-preview,
// free, within the free views' 30 a minute): the preview and the scheduler cannot disagree. Asked
// by a button, or when the cron or zone field is left after a change.
import { byId, el, utcTime } from "./view.js";

/** @typedef {import("./api.js").Session} Session */

/** `2026-11-27T09:00:00+01:00` as `2026-11-27 09:00 (+01:00)`. */
function wallClock(/** @type {string} */ local) {
  const found = /^(\d{4}-\d\d-\d\d)T(\d\d:\d\d)(?::\d\d(?:\.\d+)?)?(Z|[+-]\d\d:\d\d)$/.exec(local);
  return found ? `${found[1]} ${found[2]} (${found[3] === "Z" ? "+00:00" : found[3]})` : local;
}

/** @param {Session} session */
export function schedulePreview(session) {
  const cron = /** @type {HTMLInputElement} */ (byId("wh-cron"));
  const zone = /** @type {HTMLInputElement} */ (byId("wh-timezone"));
  const list = byId("wh-preview");
  const note = byId("wh-preview-note");

  async function preview() {
    if (cron.value.trim() === "" || zone.value.trim() === "") return;
    const { data, error, response } = await session.client.GET("/schedule-preview", {
      params: { query: { cron: cron.value.trim(), timezone: zone.value.trim() } },
    });
    if (!session.answered(response, error) || !data) {
      list.replaceChildren();
      note.textContent = typeof error === "string" ? error : "No preview: see the message above.";
      return;
    }
    note.textContent = `The next ${data.runs.length} runs of ${data.cron} in ${data.timezone}:`;
    list.replaceChildren(
      ...data.runs.map((run) => el("li", {}, `${wallClock(run.local)}, ${utcTime(run.at)} UTC`)),
    );
  }

  byId("wh-preview-button").addEventListener("click", preview);
  cron.addEventListener("change", preview);
  zone.addEventListener("change", preview);
}
