// Reads a V8 CPU profile (`deno run --cpu-prof`) and lists the functions that took the most time
// themselves (self time), grouped by function and source location, idle time left out.

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export interface HotFunction {
  name: string;
  /** Self time in milliseconds. */
  selfMs: number;
  /** Share of the sampled busy time (idle left out), in percent. */
  percent: number;
}

/** Where a function lives, short: the path below the project or below node_modules. */
function location(url: string, line: number): string {
  if (!url) return "";
  const short = url.replace(/^file:\/\/.*?\/node_modules\/\.deno\//, "npm:").replace(
    /^file:\/\/.*?\/(src|events|projections)\//,
    "$1/",
  );
  return `${short}:${line + 1}`;
}

export function hotFunctions(profile: CpuProfile, top = 15): HotFunction[] {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const selfUs = new Map<string, number>();
  let totalUs = 0;
  profile.samples.forEach((id, i) => {
    const frame = byId.get(id)?.callFrame;
    // Idle is time the service waited (for the database, for requests): not work to optimise.
    if (!frame || frame.functionName === "(idle)") return;
    const delta = profile.timeDeltas[i] ?? 0;
    totalUs += delta;
    const name = `${frame.functionName || "(anonymous)"} ${location(frame.url, frame.lineNumber)}`.trim();
    selfUs.set(name, (selfUs.get(name) ?? 0) + delta);
  });
  return [...selfUs].sort((a, b) => b[1] - a[1]).slice(0, top).map(([name, us]) => ({
    name,
    selfMs: Math.round(us / 1000),
    percent: Math.round((us / Math.max(1, totalUs)) * 1000) / 10,
  }));
}

/** The hot functions of the newest profile in a directory. */
export async function summarizeProfileDir(dir: string, top = 15): Promise<HotFunction[]> {
  const files: string[] = [];
  for await (const entry of Deno.readDir(dir)) if (entry.name.endsWith(".cpuprofile")) files.push(entry.name);
  if (files.length === 0) throw new Error(`No CPU profile in "${dir}": the service wrote none`);
  files.sort();
  return hotFunctions(JSON.parse(await Deno.readTextFile(`${dir}/${files[files.length - 1]}`)), top);
}
