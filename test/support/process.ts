/**
 * Child-process helpers for integration tests: the system under test runs as its own
 * process, exactly as an operator starts it.
 */
import { ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';

/** Repository root. */
export const ROOT = resolve(__dirname, '../..');

/**
 * One line reader per child. A readline interface per call would leave earlier ones
 * attached (each consuming and splitting the same stream), lose lines printed
 * between two calls, and stop recording into `child.lines` after the first match.
 */
interface LineLog {
  /** Every stdout line so far (the same array as `child.lines`). */
  lines: string[];
  /** Lines before this index were already consumed by an earlier match. */
  cursor: number;
  /** stdout has ended: no more lines will come. */
  ended: boolean;
  /** Woken on every new line and at the end of stdout. */
  listeners: Set<() => void>;
}

const logs = new WeakMap<ChildProcess, LineLog>();

function lineLog(child: ChildProcess): LineLog {
  let log = logs.get(child);
  if (log) return log;
  const holder = child as ChildProcess & { lines?: string[] };
  log = { lines: (holder.lines ??= []), cursor: 0, ended: false, listeners: new Set() };
  logs.set(child, log);
  const l = log;
  // Kept attached for the child's lifetime: the pipe is always drained, so a chatty
  // child never blocks on a full stdout buffer between two waits.
  if (child.stdout!.readableEnded) log.ended = true;
  const rl = createInterface({ input: child.stdout!, crlfDelay: Infinity });
  rl.on('line', (line) => {
    l.lines.push(line);
    for (const fn of [...l.listeners]) fn();
  });
  rl.on('close', () => {
    l.ended = true;
    for (const fn of [...l.listeners]) fn();
  });
  return log;
}

/**
 * Resolves with the first stdout line of `child` matching `pattern` that comes after
 * the line matched by the previous call on the same child (so consecutive calls see
 * lines printed between them); rejects when the child's output ends (it exited)
 * first or `timeoutMs` passes. All lines seen are kept on `child.lines`.
 */
export function waitForLine(child: ChildProcess, pattern: RegExp, timeoutMs = 30000): Promise<string> {
  return new Promise((resolvePromise, reject) => {
    if (!child.stdout) return reject(new Error('child has no stdout pipe'));
    const log = lineLog(child);
    // A global/sticky RegExp keeps state in lastIndex; test a copy without it.
    const re = new RegExp(pattern.source, pattern.flags.replace(/[gy]/g, ''));
    let scanned = log.cursor;
    const tail = () => log.lines.slice(-40).join('\n');

    const check = () => {
      for (; scanned < log.lines.length; scanned++) {
        const line = log.lines[scanned]!;
        if (re.test(line)) {
          log.cursor = scanned + 1;
          cleanup();
          resolvePromise(line);
          return;
        }
      }
      // Only after stdout ended (not at 'exit'): lines still in the pipe come first.
      if (log.ended) {
        cleanup();
        const fail = () => {
          const status = child.exitCode ?? child.signalCode ?? 'stdout closed';
          reject(new Error(`process exited (${status}) before printing ${pattern}; output:\n${tail()}`));
        };
        // stdout usually closes just before 'exit' is reported: wait briefly for the status.
        if (child.exitCode !== null || child.signalCode !== null) return fail();
        const grace = setTimeout(fail, 1000);
        child.once('exit', () => {
          clearTimeout(grace);
          fail();
        });
      }
    };
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`timed out after ${timeoutMs} ms waiting for ${pattern}; output:\n${tail()}`));
    }, timeoutMs);
    function cleanup() {
      clearTimeout(timer);
      log.listeners.delete(check);
    }
    log.listeners.add(check);
    check();
  });
}
