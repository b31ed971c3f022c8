/**
 * A CPU profile from Linux `perf` (sampling the `cpu-clock` software event) of a Node
 * process started with `--perf-basic-prof` (so JIT-compiled JavaScript has names).
 *
 * Why beside `node --cpu-prof` (cpu-profile.ts): V8's profiler samples on a wall-clock
 * timer and charges the time between two samples to the stack it finds, so on a shared,
 * overloaded machine a process preempted in a system call (a socket write) is charged
 * for the time it spent waiting for a CPU; `writeBuffer` then looks like a third of the
 * work. `cpu-clock` only ticks while the process runs, so these shares are CPU time,
 * wherever the kernel spends it on the process's behalf (socket writes included).
 *
 * Needs `perf` (Debian: linux-perf) and perf_event access to the process (root, or
 * kernel.perf_event_paranoid ≤ 1 for one's own processes); `perfAvailable()` says.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { relative } from 'node:path';

/** The node arguments that make JavaScript frames readable by perf. */
export const PERF_NODE_ARGS = ['--perf-basic-prof', '--interpreted-frames-native-stack'];

export function perfAvailable(): boolean {
  try {
    execFileSync('perf', ['stat', '-e', 'cpu-clock', 'true'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

export interface PerfShare {
  what: string;
  /** Share of the samples, 0..1. */
  share: number;
}

export interface PerfSummary {
  samples: number;
  /** Self time by origin: npm package, project folder, Node core, V8, kernel. */
  origins: PerfShare[];
  /** Self time by symbol (JavaScript functions as `name file:line`). */
  symbols: PerfShare[];
}

/** Where a sampled symbol's self time is charged (perf's `[k]` kernel, `[.]` user). */
export function perfOrigin(kind: string, symbol: string, root: string): string {
  if (kind === 'k') return 'kernel (system calls, network stack, scheduler)';
  const js = /^(?:JS|Eval|Function|LazyCompile):\S*\s.*?((?:\/|node:)\S+?):\d+:\d+$/.exec(symbol);
  if (js) {
    const file = js[1]!;
    if (file.startsWith('node:'))
      return `node:${file
        .slice(5)
        .replace(/^internal\//, '')
        .split('/')[0]!
        .replace(/_.*$/, '')}`;
    const nm = file.lastIndexOf('/node_modules/');
    if (nm >= 0) {
      const parts = file.slice(nm + '/node_modules/'.length).split('/');
      return `npm ${parts[0]!.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]}`;
    }
    let rel = relative(root, file).split('/');
    if (rel[0] === '.tmp' && rel[1] === 'bench-dist') rel = rel.slice(2);
    return rel.length > 2 ? `project ${rel[0]}/${rel[1]}` : `project ${rel[0]}`;
  }
  if (/^(JS|Eval|Function|LazyCompile):/.test(symbol)) return 'JavaScript (unnamed)';
  if (symbol.startsWith('Builtins_')) return 'V8 builtins';
  if (/Scaveng|MarkCompact|Heap::|GCTracer|Sweeper|ConcurrentMarking|MinorMC/.test(symbol)) return 'V8 garbage collector';
  if (/compiler::|Compile|Turbofan|Maglev|Parser::|Bytecode/.test(symbol)) return 'V8 compiler';
  if (symbol.includes('v8::')) return 'V8 runtime';
  if (/node::|uv_|uv__|llhttp|nghttp2|napi/.test(symbol)) return 'Node and libuv (native)';
  if (/ssl|SSL|EVP_|aes|sha|BN_|ecp_|x25519|ChaCha|poly1305|gcm/i.test(symbol)) return 'OpenSSL';
  return 'other native (libc, …)';
}

/** Parses `perf report --no-children --sort sym --stdio -g none` output. */
export function parsePerfReport(text: string, root: string): PerfSummary {
  const origins = new Map<string, number>();
  const symbols = new Map<string, number>();
  let samples = 0;
  for (const line of text.split('\n')) {
    const n = /^# Samples: ([\d.]+)([KM]?)/.exec(line);
    if (n) samples += Number(n[1]) * (n[2] === 'K' ? 1e3 : n[2] === 'M' ? 1e6 : 1);
    const m = /^\s*([\d.]+)%\s+\[(.)\]\s+(.+?)\s*$/.exec(line);
    if (!m) continue;
    const share = Number(m[1]) / 100;
    const symbol = m[3]!.replace(/\/\S*\.tmp\/bench-dist\//, '').replace(root + '/', '');
    const origin = perfOrigin(m[2]!, m[3]!, root);
    origins.set(origin, (origins.get(origin) ?? 0) + share);
    symbols.set(symbol, (symbols.get(symbol) ?? 0) + share);
  }
  const sorted = (m: Map<string, number>) => [...m].map(([what, share]) => ({ what, share })).sort((a, b) => b.share - a.share);
  return { samples, origins: sorted(origins), symbols: sorted(symbols) };
}

/**
 * Charges each sample to the innermost JavaScript frame of its call chain (perf script
 * output of a `-g` recording): the interpreter's bytecode handlers, inline caches and
 * builtins a function runs on count as that function's, which self time (above) cannot
 * show. Samples with no JavaScript frame keep their native origin (the garbage
 * collector, the compiler threads, libuv, the kernel's network work from an event).
 */
export function parsePerfScript(text: string, root: string): { samples: number; origins: PerfShare[]; functions: PerfShare[] } {
  const origins = new Map<string, number>();
  const functions = new Map<string, number>();
  let samples = 0;
  const add = (m: Map<string, number>, k: string) => m.set(k, (m.get(k) ?? 0) + 1);
  for (const block of text.split(/\n\s*\n/)) {
    const frames = block
      .split('\n')
      .slice(1)
      .map((l) => /^\s*[0-9a-f]+\s+(.+?)\s+\((.*)\)\s*$/.exec(l))
      .filter((m) => m !== null);
    if (frames.length === 0) continue;
    samples++;
    const js = frames.find((m) => /^(JS|Eval|Function|LazyCompile):/.test(m[1]!));
    if (js) {
      add(origins, perfOrigin('.', js[1]!, root));
      add(
        functions,
        js[1]!
          .replace(/^\w+:[*~^+-]?/, '')
          .replace(/\/\S*\.tmp\/bench-dist\//, '')
          .replace(root + '/', ''),
      );
    } else {
      const leaf = frames[0]!;
      add(origins, perfOrigin(leaf[2]!.includes('kernel') ? 'k' : '.', leaf[1]!, root));
    }
  }
  const sorted = (m: Map<string, number>) => [...m].map(([what, n]) => ({ what, share: samples ? n / samples : 0 })).sort((a, b) => b.share - a.share);
  return { samples, origins: sorted(origins), functions: sorted(functions) };
}

export interface PerfRecording {
  /** Self time by origin and symbol. */
  self: PerfSummary;
  /** Each sample charged to its innermost JavaScript function (parsePerfScript). */
  byJavaScript: { samples: number; origins: PerfShare[]; functions: PerfShare[] };
}

/**
 * `--perf-basic-prof` appends a line per code object to /tmp/perf-<pid>.map and never
 * removes one, but the garbage collector frees and moves code, so later code reuses the
 * addresses of earlier (start-up) code and perf would name it after the first entry.
 * Rewrites the map keeping, for any address, only the latest entry that covers it.
 */
export function dedupePerfMap(pid: number): void {
  const file = `/tmp/perf-${pid}.map`;
  if (!existsSync(file)) return;
  const entries = readFileSync(file, 'utf8')
    .split('\n')
    .map((l) => /^([0-9a-f]+) ([0-9a-f]+) (.*)$/.exec(l))
    .filter((m) => m !== null)
    .map((m) => ({ start: parseInt(m[1]!, 16), end: parseInt(m[1]!, 16) + parseInt(m[2]!, 16), line: m[0] }));
  // Newest first; an entry survives if no newer survivor overlaps it (sorted starts + binary search).
  const kept: { start: number; end: number; line: string }[] = [];
  const starts: number[] = [];
  for (let i = entries.length - 1; i >= 0; i--) {
    const e = entries[i]!;
    let lo = 0;
    let hi = starts.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (starts[mid]! < e.end) lo = mid + 1;
      else hi = mid;
    }
    // kept[lo - 1] is the last survivor starting before e ends: it overlaps e if it ends after e starts.
    const before = kept[lo - 1];
    if (before && before.end > e.start) continue;
    kept.splice(lo, 0, e);
    starts.splice(lo, 0, e.start);
  }
  writeFileSync(file, `${kept.map((e) => e.line).join('\n')}\n`);
}

/**
 * Starts `perf record -g` on `pid` (started with PERF_NODE_ARGS), writing `file`; the
 * returned function stops it and summarises what it recorded.
 */
export function startPerf(pid: number, file: string, root: string): () => Promise<PerfRecording> {
  const perf: ChildProcess = spawn('perf', ['record', '-e', 'cpu-clock', '-F', '999', '-g', '-p', String(pid), '-o', file], { stdio: 'ignore' });
  return async () => {
    const exited = new Promise<void>((r) => perf.once('exit', () => r()));
    perf.kill('SIGINT');
    await exited;
    dedupePerfMap(pid);
    const run = (args: string[]) => execFileSync('perf', args, { encoding: 'utf8', maxBuffer: 1 << 30, stdio: ['ignore', 'pipe', 'ignore'] });
    const self = parsePerfReport(run(['report', '-i', file, '--no-children', '--sort', 'sym', '--stdio', '-g', 'none', '--percent-limit', '0']), root);
    const byJavaScript = parsePerfScript(run(['script', '-i', file, '-F', 'comm,ip,sym,dso']), root);
    return { self, byJavaScript };
  };
}

/** "kernel 31 %, V8 builtins 22 %, …" — the first `n`. */
export function formatShares(shares: PerfShare[], n: number, digits = 0): string {
  return shares
    .slice(0, n)
    .map((s) => `${s.what} ${(s.share * 100).toFixed(digits)} %`)
    .join(', ');
}
