// The folder picture of `deno task layout` (layout.ts), from the file imports alone: rooms (the
// folders one level under src/, each file directly in src/, events/ and projections/), the arrows
// between them, the imports that run back up the declared floors, the folder loops and each folder's
// entry points. Pure: the files and imports come in, the picture goes out.

/** One import of one file by another, as paths from the repository root (`src/kv/commands.ts`). */
export interface FileImport {
  from: string;
  to: string;
}

export interface LayoutRules {
  /** Rooms by floor, top floor first; a room not named is placed just above what it imports. */
  floors: string[][];
  /** Imports from room to room that run back up yet may close a loop: the loops of today. */
  allowed: [string, string][];
  /** Folders with one face: the only file that files outside the folder may import. */
  faces?: Record<string, string>;
}

export interface Room {
  name: string;
  /** Its source files. */
  files: number;
  floor: number;
  /** Whether its floor is declared, or computed from its imports. */
  declared: boolean;
}

/** All the imports from the files of one room to the files of another. */
export interface Arrow {
  from: string;
  to: string;
  imports: FileImport[];
}

/** A file of a folder imported from outside the folder, and by how many files. */
export interface EntryPoint {
  file: string;
  importers: number;
}

export interface Layout {
  /** Top floor first, then by name. */
  rooms: Room[];
  arrows: Arrow[];
  /** The arrows from a lower floor to a higher one. */
  backUp: Arrow[];
  /** The strongly connected sets of rooms (more than one room each). */
  loops: string[][];
  /** The pairs of rooms that import each other: the shortest loops. */
  twoWay: [string, string][];
  /** Per folder: its files imported from outside it, the most imported first. */
  entries: Map<string, EntryPoint[]>;
  /** Arrows that close a loop and are not allowed: back up, or between rooms of one floor. */
  newLoopArrows: Arrow[];
  /** Allowed arrows that no longer close a loop (or no longer exist): the list can shrink. */
  staleAllowed: [string, string][];
  /** Imports from outside a folder with a face (LayoutRules.faces) of a file other than its face. */
  pastFaces: FileImport[];
}

/** The room of a file, or undefined for a file outside src/, events/ and projections/. */
export function roomOf(path: string): string | undefined {
  const parts = path.split("/");
  if (parts[0] === "events" || parts[0] === "projections") return `${parts[0]}/`;
  if (parts[0] !== "src" || parts.length < 2) return undefined;
  return parts.length === 2 ? path : `src/${parts[1]}/`;
}

export function layoutOf(files: string[], imports: FileImport[], rules: LayoutRules): Layout {
  const fileCounts = new Map<string, number>();
  for (const file of files) {
    const room = roomOf(file);
    if (room) fileCounts.set(room, (fileCounts.get(room) ?? 0) + 1);
  }
  const arrowsByKey = new Map<string, Arrow>();
  for (const edge of imports) {
    const from = roomOf(edge.from);
    const to = roomOf(edge.to);
    if (!from || !to || from === to) continue;
    const key = `${from}\n${to}`;
    const arrow = arrowsByKey.get(key) ?? { from, to, imports: [] };
    arrow.imports.push(edge);
    arrowsByKey.set(key, arrow);
  }
  const arrows = [...arrowsByKey.values()].sort((a, b) => compare(a.from, b.from) || compare(a.to, b.to));
  const names = [...new Set([...fileCounts.keys(), ...arrows.flatMap((a) => [a.from, a.to])])].sort(compare);
  const targets = new Map(names.map((name) => [name, [] as string[]]));
  for (const arrow of arrows) targets.get(arrow.from)!.push(arrow.to);

  const componentOf = stronglyConnected(names, targets);
  const floors = floorsOf(names, targets, componentOf, rules.floors);
  const rooms = names
    .map((name) => ({ name, files: fileCounts.get(name) ?? 0, ...floors.get(name)! }))
    .sort((a, b) => b.floor - a.floor || compare(a.name, b.name));
  const floorOf = (room: string) => floors.get(room)!.floor;

  const loopMembers = new Map<number, string[]>();
  for (const name of names) {
    loopMembers.set(componentOf.get(name)!, [...loopMembers.get(componentOf.get(name)!) ?? [], name]);
  }
  const loops = [...loopMembers.values()].filter((members) => members.length > 1);
  const twoWay = arrows
    .filter((arrow) => arrow.from < arrow.to && arrowsByKey.has(`${arrow.to}\n${arrow.from}`))
    .map((arrow): [string, string] => [arrow.from, arrow.to]);
  const inLoop = (arrow: Arrow) => componentOf.get(arrow.from) === componentOf.get(arrow.to);

  const backUp = arrows.filter((arrow) => floorOf(arrow.from) < floorOf(arrow.to));
  const allowed = new Set(rules.allowed.map(([from, to]) => `${from}\n${to}`));
  const upAndNew = backUp.filter((arrow) => inLoop(arrow) && !allowed.has(`${arrow.from}\n${arrow.to}`));
  const levelLoops = loopsWithinFloors(names, arrows, floorOf);
  const staleAllowed = rules.allowed.filter(([from, to]) => {
    const arrow = arrowsByKey.get(`${from}\n${to}`);
    return !arrow || !inLoop(arrow);
  });

  return {
    rooms,
    arrows,
    backUp,
    loops,
    twoWay,
    entries: entryPoints(files, imports),
    newLoopArrows: [...upAndNew, ...levelLoops],
    staleAllowed,
    pastFaces: pastFaces(imports, rules.faces ?? {}),
  };
}

/** The arrows of loops within one floor: such a loop has no arrow back up to show it. */
function loopsWithinFloors(names: string[], arrows: Arrow[], floorOf: (room: string) => number): Arrow[] {
  const level = arrows.filter((arrow) => floorOf(arrow.from) === floorOf(arrow.to));
  const targets = new Map(names.map((name) => [name, [] as string[]]));
  for (const arrow of level) targets.get(arrow.from)!.push(arrow.to);
  const componentOf = stronglyConnected(names, targets);
  return level.filter((arrow) => componentOf.get(arrow.from) === componentOf.get(arrow.to));
}

/** Tarjan's algorithm: the component number of each node. */
function stronglyConnected(nodes: string[], targets: Map<string, string[]>): Map<string, number> {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const component = new Map<string, number>();
  const stack: string[] = [];
  let next = 0;
  let components = 0;
  const visit = (node: string) => {
    index.set(node, next);
    low.set(node, next++);
    stack.push(node);
    for (const target of targets.get(node) ?? []) {
      if (!index.has(target)) {
        visit(target);
        low.set(node, Math.min(low.get(node)!, low.get(target)!));
      } else if (!component.has(target)) {
        low.set(node, Math.min(low.get(node)!, index.get(target)!));
      }
    }
    if (low.get(node) !== index.get(node)) return;
    let member: string;
    do {
      member = stack.pop()!;
      component.set(member, components);
    } while (member !== node);
    components++;
  };
  for (const node of nodes) if (!index.has(node)) visit(node);
  return component;
}

/**
 * Declared floors as given; a room not declared goes one floor above the highest room its loop (or
 * it alone) imports outside the loop, floor 1 when none, so a new leaf lands at the bottom.
 */
function floorsOf(
  names: string[],
  targets: Map<string, string[]>,
  componentOf: Map<string, number>,
  declaredFloors: string[][],
): Map<string, { floor: number; declared: boolean }> {
  const declared = new Map<string, number>();
  declaredFloors.forEach((rooms, i) =>
    rooms.forEach((room) => declared.set(room, declaredFloors.length - i))
  );
  const members = new Map<number, string[]>();
  for (const name of names) {
    members.set(componentOf.get(name)!, [...members.get(componentOf.get(name)!) ?? [], name]);
  }
  const computed = new Map<number, number>();
  // Recursion over the loops' graph, which has no loop: it ends at the rooms that import nothing.
  const floorOfComponent = (c: number): number => {
    const known = computed.get(c);
    if (known !== undefined) return known;
    const below = members.get(c)!.flatMap((name) => targets.get(name) ?? [])
      .filter((target) => componentOf.get(target) !== c)
      .map((target) => declared.get(target) ?? floorOfComponent(componentOf.get(target)!));
    const floor = 1 + Math.max(0, ...below);
    computed.set(c, floor);
    return floor;
  };
  return new Map(names.map((name) => {
    const floor = declared.get(name);
    return [
      name,
      floor !== undefined
        ? { floor, declared: true }
        : { floor: floorOfComponent(componentOf.get(name)!), declared: false },
    ];
  }));
}

function pastFaces(imports: FileImport[], faces: Record<string, string>): FileImport[] {
  return imports.filter(({ from, to }) => {
    const room = roomOf(to)!;
    return room in faces && roomOf(from) !== room && to !== `${room}${faces[room]}`;
  });
}

function entryPoints(files: string[], imports: FileImport[]): Map<string, EntryPoint[]> {
  const importers = new Map<string, Set<string>>();
  for (const { from, to } of imports) {
    const room = roomOf(to);
    if (!room?.endsWith("/") || roomOf(from) === room) continue;
    importers.set(to, (importers.get(to) ?? new Set()).add(from));
  }
  const entries = new Map<string, EntryPoint[]>();
  for (const file of files) {
    const room = roomOf(file);
    if (room?.endsWith("/")) entries.set(room, entries.get(room) ?? []);
  }
  for (const [file, from] of importers) {
    const room = roomOf(file)!;
    entries.set(room, [...entries.get(room) ?? [], { file, importers: from.size }]);
  }
  for (const list of entries.values()) {
    list.sort((a, b) => b.importers - a.importers || compare(a.file, b.file));
  }
  return entries;
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
