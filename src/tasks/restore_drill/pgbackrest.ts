// pgBackRest as the drill drives it: the deployment's options with a repository in a folder of the
// run's own, and every command run as the cluster's owner (postgres), as the user guide does.
import { ensureTool, run } from "../bench/system.ts";
import { deployedGlobalOptions } from "./deploy_settings.ts";

/** The stanza of the drill's source cluster. */
export const STANZA = "drill";

export interface Repository {
  /** The run's folder: configuration, repository, spool, lock and log folders. */
  dir: string;
  config: string;
  /** Runs `pgbackrest --config=... --stanza=drill <args>` as postgres; its output. */
  command(args: string[]): Promise<string>;
  /** The `archive_command` the source cluster pushes its WAL with. */
  archiveCommand: string;
}

export interface RepositoryOptions {
  /** The source cluster's data folder and port (pg1-path, pg1-port). */
  pgPath: string;
  pgPort: number;
}

/** Installs Debian's pgbackrest when it is missing; its version line. */
export async function ensurePgbackrest(): Promise<string> {
  await ensureTool("pgbackrest", "pgbackrest");
  return (await run("pgbackrest", ["version"])).trim();
}

/**
 * The drill's configuration: the deployment's options (`deployed`: compression, processes,
 * retention, asynchronous archiving) with a repository, spool, lock and log folder of its own.
 */
export function repositoryConfig(
  dir: string,
  options: RepositoryOptions,
  deployed: [string, string][],
): string {
  return [
    "[global]",
    `repo1-path=${dir}/repo`,
    `spool-path=${dir}/spool`,
    `lock-path=${dir}/lock`,
    `log-path=${dir}/log`,
    "log-level-console=warn",
    "log-level-file=info",
    ...deployed.map(([option, value]) => `${option}=${value}`),
    "",
    `[${STANZA}]`,
    `pg1-path=${options.pgPath}`,
    `pg1-port=${options.pgPort}`,
    "pg1-socket-path=/var/run/postgresql",
    "",
  ].join("\n");
}

/** The commands running as postgres, so that a stopped drill can end them (a restore, say). */
const running = new Set<Deno.ChildProcess>();

/**
 * Runs a command as postgres (the owner of the data folders and of the repository's files) to
 * completion; its output (stdout then stderr), or an error quoting both.
 */
export async function runAsPostgres(command: string, args: string[]): Promise<string> {
  const child = new Deno.Command("runuser", {
    args: ["-u", "postgres", "--", command, ...args],
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  running.add(child);
  try {
    const out = await child.output();
    const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
    if (!out.success) throw new Error(`Command "${command} ${args.join(" ")}" failed:\n${text}`);
    return text;
  } finally {
    running.delete(child);
  }
}

/** Sends SIGTERM to every command still running as postgres (runuser passes it on). */
export function stopRunningCommands() {
  for (const child of running) {
    try {
      child.kill("SIGTERM");
    } catch { /* already gone */ }
  }
}

/** Makes the run's folder (owned by postgres, who archives into it) and its configuration file. */
export async function createRepository(options: RepositoryOptions): Promise<Repository> {
  const dir = await Deno.makeTempDir({ prefix: "restore-drill-" });
  const config = `${dir}/pgbackrest.conf`;
  await Deno.writeTextFile(config, repositoryConfig(dir, options, await deployedGlobalOptions()));
  const { uid, gid } = await postgresUser();
  for (const sub of ["repo", "spool", "lock", "log"]) await Deno.mkdir(`${dir}/${sub}`, { mode: 0o750 });
  for (const path of [dir, config, ...["repo", "spool", "lock", "log"].map((sub) => `${dir}/${sub}`)]) {
    await Deno.chown(path, uid, gid);
  }
  return {
    dir,
    config,
    archiveCommand: `pgbackrest --config=${config} --stanza=${STANZA} archive-push %p`,
    command: (args) => runAsPostgres("pgbackrest", [`--config=${config}`, `--stanza=${STANZA}`, ...args]),
  };
}

async function postgresUser(): Promise<{ uid: number; gid: number }> {
  const [uid, gid] = await Promise.all([run("id", ["-u", "postgres"]), run("id", ["-g", "postgres"])]);
  return { uid: Number(uid.trim()), gid: Number(gid.trim()) };
}

export interface BackupInfo {
  label: string;
  type: string;
  /** Bytes of the database, and stored in the repository. */
  size: number;
  repoSize: number;
  /** WAL range the backup needs to be consistent. */
  walStart: string;
  walStop: string;
}

/** The stanza's backups, oldest first, from `pgbackrest info --output=json`. */
export async function listBackups(repo: Pick<Repository, "command">): Promise<BackupInfo[]> {
  const [stanza] = JSON.parse(await repo.command(["--output=json", "info"]));
  return (stanza?.backup ?? []).map((b: any) => ({
    label: b.label,
    type: b.type,
    size: b.info.size,
    repoSize: b.info.repository.delta,
    walStart: b.archive.start,
    walStop: b.archive.stop,
  }));
}
