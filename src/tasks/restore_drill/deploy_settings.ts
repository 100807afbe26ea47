// The deployed backup settings (src/deploy/pgbackrest.conf and pgbackrest-postgresql.conf) as the
// drill takes them: the same pgBackRest options and PostgreSQL archive settings, with the
// repository moved to a local folder of the run's own (the deployment's is an S3 bucket).
export const DEPLOY_DIR = new URL("../../deploy/", import.meta.url).pathname;
export const PGBACKREST_FILE = `${DEPLOY_DIR}pgbackrest.conf`;
export const POSTGRESQL_FILE = `${DEPLOY_DIR}pgbackrest-postgresql.conf`;
export const BACKUP_UNIT_FILE = `${DEPLOY_DIR}pgbackrest-backup@.service`;
export const BACKUP_TIMER_FILE = `${DEPLOY_DIR}pgbackrest-backup@.timer`;

/** An ini file's sections: name to [option, value] lines, in order (comments and blanks left out). */
export function parseIni(text: string): Map<string, [string, string][]> {
  const sections = new Map<string, [string, string][]>();
  let current: [string, string][] | undefined;
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (!line || line.startsWith("#")) continue;
    const header = line.match(/^\[(.+)\]$/);
    if (header) {
      current = [];
      sections.set(header[1], current);
      continue;
    }
    const eq = line.indexOf("=");
    if (!current || eq < 0) throw new Error(`Unexpected line "${line}" in an ini file`);
    current.push([line.slice(0, eq).trim(), line.slice(eq + 1).trim()]);
  }
  return sections;
}

/** Options that say where the deployment's repository, spool and logs are: the drill sets its own. */
const PLACE_OPTIONS = /^(repo1-(type|path|s3-.+|cipher-.+)|spool-path|lock-path|log-path|log-level-.+)$/;

/** The deployed [global] options the drill keeps: compression, processes, retention, archiving. */
export async function deployedGlobalOptions(): Promise<[string, string][]> {
  const global = parseIni(await Deno.readTextFile(PGBACKREST_FILE)).get("global") ?? [];
  return global.filter(([option]) => !PLACE_OPTIONS.test(option));
}

/** PostgreSQL's `key = value` lines of pgbackrest-postgresql.conf, values as written. */
export async function deployedArchiveSettings(): Promise<Record<string, string>> {
  const settings: Record<string, string> = {};
  for (const raw of (await Deno.readTextFile(POSTGRESQL_FILE)).split("\n")) {
    const line = raw.trim();
    if (!line || line.startsWith("#")) continue;
    const match = line.match(/^([a-z_]+)\s*=\s*(.+)$/);
    if (!match) throw new Error(`Unexpected line "${line}" in ${POSTGRESQL_FILE}`);
    settings[match[1]] = match[2];
  }
  return settings;
}

/** "60s", "1min", "90" (seconds) as seconds. */
export function settingSeconds(value: string): number {
  const match = value.replaceAll("'", "").match(/^(\d+)\s*(s|min)?$/);
  if (!match) throw new Error(`Invalid duration "${value}": must be like 60s or 1min`);
  return Number(match[1]) * (match[2] === "min" ? 60 : 1);
}
