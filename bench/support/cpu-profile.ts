/**
 * Summarises a V8 `.cpuprofile` (from `node --cpu-prof`) as self time per origin:
 * npm package, Node core area, project directory, GC, native code. Enough to see where
 * a request's CPU goes without opening a profiler UI.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber?: number };
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  /** Microseconds (V8's clock). */
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileShare {
  origin: string;
  /** Share of the non-idle samples' time, 0..1. */
  share: number;
}

/** The origin a frame's self time is charged to. */
function originOf(frame: ProfileNode['callFrame'], root: string): string {
  const { url, functionName } = frame;
  if (functionName === '(garbage collector)') return 'V8 garbage collector';
  if (functionName === '(program)') return 'V8 (program: compiler, runtime, native)';
  if (url === '') return 'V8 builtins and native functions';
  const nm = url.lastIndexOf('/node_modules/');
  if (nm >= 0) {
    const parts = url.slice(nm + '/node_modules/'.length).split('/');
    return `npm ${parts[0]!.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]}`;
  }
  if (url.startsWith('node:')) {
    const parts = url
      .slice('node:'.length)
      .replace(/^internal\//, '')
      .split('/');
    const area = parts.length > 1 ? parts[0]! : parts[0]!.replace(/^_/, '').replace(/_.*$/, '');
    return `node:${area}`;
  }
  const path = url.startsWith('file://') ? new URL(url).pathname : url;
  let rel = relative(root, path).split('/');
  if (rel[0] === '..') return 'other';
  // The compiled build the benches run (compiled-build.ts): charge its files to their sources' folders.
  if (rel[0] === '.tmp' && rel[1] === 'bench-dist') rel = rel.slice(2);
  return rel.length > 2 ? `project ${rel[0]}/${rel[1]}` : `project ${rel[0]}`;
}

/**
 * Only the samples taken while the load ran: `window` gives its start and end as
 * milliseconds before the end of the profile (the process's exit), as measured by
 * the caller's clock. Start-up and shutdown are left out.
 */
export interface ProfileWindow {
  startBeforeEndMs: number;
  endBeforeEndMs: number;
}

/** Self time per origin, largest first (idle time excluded). */
export function summariseProfile(file: string, root: string, window?: ProfileWindow): { shares: ProfileShare[]; busyMs: number } {
  return summarise(file, window, (frame) => originOf(frame, root));
}

/**
 * Self time per function (`name file:line`, project-relative), largest first: which
 * functions the origins of `summariseProfile` are made of.
 */
export function summariseFunctions(file: string, root: string, window?: ProfileWindow): { shares: ProfileShare[]; busyMs: number } {
  return summarise(file, window, (frame) => functionOf(frame, root));
}

/** `name file:line`, the file relative to the project (the compiled build's path mapped back). */
function functionOf(frame: ProfileNode['callFrame'], root: string): string {
  const url = frame.url.startsWith('file://') ? new URL(frame.url).pathname : frame.url;
  const where = url === '' ? '' : ` ${url.startsWith('/') ? relative(root, url).replace(/^\.tmp\/bench-dist\//, '') : url}:${(frame.lineNumber ?? 0) + 1}`;
  return `${frame.functionName || '(anonymous)'}${where}`;
}

/**
 * Inclusive time (self and callees) per function, largest first: for a function that
 * does little itself but calls much (a middleware, a request handler).
 */
export function summariseInclusive(file: string, root: string, window?: ProfileWindow): { shares: ProfileShare[]; busyMs: number } {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const totals = new Map<string, number>();
  const from = window ? profile.endTime - window.startBeforeEndMs * 1000 : -Infinity;
  const to = window ? profile.endTime - window.endBeforeEndMs * 1000 : Infinity;
  let busy = 0;
  let t = profile.startTime;
  profile.samples.forEach((id, i) => {
    const dt = profile.timeDeltas[i] ?? 0;
    t += dt;
    if (t < from || t > to) return;
    const leaf = byId.get(id);
    if (!leaf || leaf.callFrame.functionName === '(idle)') return;
    busy += dt;
    // Each function once per sample, however deep it recurses.
    const seen = new Set<string>();
    for (let n: ProfileNode | undefined = leaf; n; n = byId.get(parent.get(n.id) ?? -1)) {
      const k = functionOf(n.callFrame, root);
      if (seen.has(k)) continue;
      seen.add(k);
      totals.set(k, (totals.get(k) ?? 0) + dt);
    }
  });
  const shares = [...totals].map(([origin, us]) => ({ origin, share: busy > 0 ? us / busy : 0 })).sort((a, b) => b.share - a.share);
  return { shares, busyMs: busy / 1000 };
}

function summarise(file: string, window: ProfileWindow | undefined, keyOf: (frame: ProfileNode['callFrame']) => string): { shares: ProfileShare[]; busyMs: number } {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const totals = new Map<string, number>();
  const from = window ? profile.endTime - window.startBeforeEndMs * 1000 : -Infinity;
  const to = window ? profile.endTime - window.endBeforeEndMs * 1000 : Infinity;
  let busy = 0;
  let t = profile.startTime;
  profile.samples.forEach((id, i) => {
    const dt = profile.timeDeltas[i] ?? 0;
    t += dt;
    if (t < from || t > to) return;
    const node = byId.get(id);
    if (!node || node.callFrame.functionName === '(idle)') return;
    const origin = keyOf(node.callFrame);
    totals.set(origin, (totals.get(origin) ?? 0) + dt);
    busy += dt;
  });
  const shares = [...totals].map(([origin, us]) => ({ origin, share: busy > 0 ? us / busy : 0 })).sort((a, b) => b.share - a.share);
  return { shares, busyMs: busy / 1000 };
}

/** The one `.cpuprofile` written into `dir`. */
export function profileIn(dir: string): string | undefined {
  const f = readdirSync(dir).find((n) => n.endsWith('.cpuprofile'));
  return f === undefined ? undefined : join(dir, f);
}
