/**
 * The one background-worker loop of the services: poll with nudge, back-off on
 * errors, leases renewed while work is in flight, graceful drain, metrics.
 *
 * A Worker calls `round()` again and again. A round does one unit of polling work —
 * claim a batch of rows and handle them, or start tasks for them — and says how many
 * items it took and whether more is waiting:
 * - `more`: go again at once (a full batch: more may be waiting);
 * - otherwise wait `idleMs`, or less if `nudge()` is called meanwhile (a commit in this
 *   process made work; a nudge during the round means "go again" too). Waiting is how
 *   work made by other replicas is found;
 * - after an idle wait that ran out, `idleCheck` (optional) is asked first, and the round
 *   runs only if it answers true: polling costs a cheap query, not the round's claim;
 * - a round that throws is retried after a capped, jittered exponential back-off
 *   (`backoffMs`), which a nudge does not cut short: a failing database is not hammered.
 *
 * Work that outlives its round (a webhook attempt, a photo fetch) runs as a task
 * (`spawn`): counted in `inFlight`, given an AbortSignal, and the loop is nudged when it
 * ends (a slot is free), unless `nudgeOnTaskEnd` (asked at that moment, after the task's
 * own clean-up) says that the free slot cannot let more work start: a worker whose last
 * round took everything it could see saves a round that would find nothing (the
 * webhook dispatcher, services/notifications/dispatcher.ts). `stop(graceMs)` claims
 * nothing more, waits up to `graceMs` for the tasks, then aborts the rest and waits for them. While anything runs, the optional
 * lease timer calls `lease.renew()` every `lease.everyMs`, so claims whose work is slow
 * are not taken over by another replica.
 *
 * Metrics (metrics.ts, label `worker`): rounds, failed rounds, items per round, and the
 * time spent in rounds (busy seconds).
 *
 * Every timer is unref'd: a worker never keeps a process alive by itself.
 */
import { systemClock, type Clock, type ClockTimer } from '../base';
import { recordWorkerRound, recordWorkerRoundFailed } from '../telemetry';

/** What a round did. */
export interface RoundResult {
  /** Items claimed or handled (metrics). */
  items: number;
  /** More work is waiting: run the next round at once. */
  more: boolean;
}

/** Exponential back-off: the delay after the n-th failure in a row. */
export interface BackoffPolicy {
  /** Delay after the first failure. */
  baseMs: number;
  /** The cap. */
  maxMs: number;
  /** ± this fraction of random spread, so that replicas failing together do not retry together; default 0.2. */
  jitter?: number;
}

/** base · 2^(n−1), capped at max, spread ± jitter (the result never exceeds max). */
export function backoffMs(failures: number, policy: BackoffPolicy, random: () => number = Math.random): number {
  const exp = policy.baseMs * 2 ** Math.min(Math.max(0, failures - 1), 30);
  const jitter = policy.jitter ?? 0.2;
  const spread = 1 - jitter + 2 * jitter * random();
  return Math.max(0, Math.round(Math.min(policy.maxMs, Math.min(policy.maxMs, exp) * spread)));
}

export interface WorkerOptions {
  /** Metrics label and log name, e.g. `calendar-outbox`. */
  name: string;
  /** One round of work. Throwing counts as a failed round (back-off, then again). */
  round: () => Promise<RoundResult>;
  /** Wait between rounds when no work is waiting and nobody nudges. */
  idleMs: number;
  /** Wait before the first round; default 0. */
  firstDelayMs?: number;
  /**
   * Asked before a round that follows an idle wait which ran out (nobody nudged, the last
   * round neither had `more` nor failed): false skips that round. For a cheap "is
   * anything waiting?" query in front of an expensive claim, so that an idle poll costs
   * the query alone. Throwing counts as a failed round.
   */
  idleCheck?: () => Promise<boolean>;
  /** Whether nudge() ends an idle wait; default true (false: a timer-driven job). */
  wakeOnNudge?: boolean;
  /** Back-off after failed rounds; default base idleMs (at least 50 ms), cap 10 s. */
  backoff?: BackoffPolicy;
  /** Told about each failed round (a log line); the loop goes on after `retryInMs`. */
  onError: (err: unknown, retryInMs: number, failures: number) => void;
  /** Told about a task that threw (tasks should handle their own errors). */
  onTaskError?: (err: unknown) => void;
  /** Lease renewal while rounds or tasks run: `renew()` every `everyMs`; a failure is the caller's to log. */
  lease?: { everyMs: number; renew: () => Promise<void> };
  /**
   * Asked when a task ends (not while stopping), after the task's own clean-up: true
   * nudges the loop (its slot is free, more work may start), false leaves it to its
   * idle wait. Default: always nudge. Answer false only when a round run now could
   * start nothing that the last round could not; work found later is the idle poll's.
   */
  nudgeOnTaskEnd?: () => boolean;
  /** Time and timers of the waits, the back-off and the lease renewal; default the system's. */
  clock?: Clock;
}

interface Task {
  abort: AbortController;
  done: Promise<void>;
}

export class Worker {
  private readonly opts: WorkerOptions;
  private readonly backoff: BackoffPolicy;
  private readonly clock: Clock;
  private readonly tasks = new Set<Task>();
  private loop: Promise<void> | null = null;
  private stopping = false;
  private nudged = false;
  private wake: (() => void) | null = null;
  private leaseTimer: ClockTimer | null = null;

  constructor(opts: WorkerOptions) {
    this.opts = opts;
    this.clock = opts.clock ?? systemClock;
    this.backoff = opts.backoff ?? { baseMs: Math.max(50, opts.idleMs), maxMs: 10_000 };
  }

  /** Starts the loop; calling it while running is harmless; a stopped worker may start again. */
  start(): void {
    if (this.loop) return;
    this.stopping = false;
    this.nudged = false;
    if (this.opts.lease) {
      const { everyMs, renew } = this.opts.lease;
      this.leaseTimer = this.clock.setInterval(() => void renew().catch(() => undefined), everyMs);
    }
    this.loop = this.run();
  }

  /** Work is waiting: end the idle wait now (or run again right after the round in progress). */
  nudge(): void {
    this.nudged = true;
    if (this.opts.wakeOnNudge !== false) this.wake?.();
  }

  /** True from stop() on: rounds and tasks may check it between steps. */
  get isStopping(): boolean {
    return this.stopping;
  }

  /** Tasks running now. */
  get inFlight(): number {
    return this.tasks.size;
  }

  /**
   * Runs `task` beside the loop (its signal aborts when stop()'s grace ends). When it
   * ends the loop is nudged (its slot is free) if `nudgeOnTaskEnd` says so (default: always).
   */
  spawn(task: (signal: AbortSignal) => Promise<void>): void {
    const abort = new AbortController();
    const entry: Task = { abort, done: Promise.resolve() };
    entry.done = task(abort.signal)
      .catch((err) => this.opts.onTaskError?.(err))
      .finally(() => {
        this.tasks.delete(entry);
        if (!this.stopping && (this.opts.nudgeOnTaskEnd?.() ?? true)) this.nudge();
      });
    this.tasks.add(entry);
  }

  /**
   * Claims nothing more: ends the wait, lets the round in progress finish, waits up to
   * `graceMs` (default 0) for the tasks, aborts those still running (telling
   * `onAbort` how many first) and waits for them. Returns how many were aborted.
   */
  async stop(graceMs = 0, onAbort?: (tasks: number) => void): Promise<number> {
    this.stopping = true;
    this.wake?.();
    await this.loop;
    this.loop = null;
    let aborted = 0;
    if (this.tasks.size > 0) {
      const all = () => Promise.all([...this.tasks].map((t) => t.done));
      if (graceMs > 0) {
        let timer: ClockTimer | undefined;
        await Promise.race([all(), new Promise<void>((r) => (timer = this.clock.setTimeout(r, graceMs)))]);
        this.clock.clearTimeout(timer);
      }
      aborted = this.tasks.size;
      if (aborted > 0) onAbort?.(aborted);
      for (const t of this.tasks) t.abort.abort();
      await all();
    }
    if (this.leaseTimer) this.clock.clearInterval(this.leaseTimer);
    this.leaseTimer = null;
    return aborted;
  }

  private async run(): Promise<void> {
    const { name, round, idleMs } = this.opts;
    const wakeOnNudge = this.opts.wakeOnNudge !== false;
    // Never inside start()'s call: the first round runs on a later tick.
    await Promise.resolve();
    if ((this.opts.firstDelayMs ?? 0) > 0) await this.wait(this.opts.firstDelayMs!, wakeOnNudge);
    let failures = 0;
    // The round about to run follows an idle wait that ran out (no nudge, no `more`, no failure).
    let afterIdleWait = false;
    while (!this.stopping) {
      const check = afterIdleWait && !this.nudged ? this.opts.idleCheck : undefined;
      afterIdleWait = false;
      this.nudged = false;
      const started = performance.now();
      let result: RoundResult;
      try {
        result = check && !(await check()) ? { items: 0, more: false } : await round();
      } catch (err) {
        failures++;
        recordWorkerRoundFailed(name, (performance.now() - started) / 1000);
        const delay = backoffMs(failures, this.backoff);
        this.opts.onError(err, delay, failures);
        await this.wait(delay, false);
        continue;
      }
      failures = 0;
      recordWorkerRound(name, result.items, (performance.now() - started) / 1000);
      if (result.more || (this.nudged && wakeOnNudge)) continue;
      await this.wait(idleMs, wakeOnNudge);
      afterIdleWait = true;
    }
  }

  /** Waits `ms`; stop() always ends the wait, a nudge only when `wakeOnNudge`. */
  private wait(ms: number, wakeOnNudge: boolean): Promise<void> {
    if (this.stopping) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        this.clock.clearTimeout(timer);
        if (this.wake === wakeUp) this.wake = null;
        resolve();
      };
      const wakeUp = () => {
        if (wakeOnNudge || this.stopping) done();
      };
      const timer = this.clock.setTimeout(done, ms);
      this.wake = wakeUp;
    });
  }
}

/**
 * A wake-up shared by many waiters (streams tailing a log, consumers of an in-process
 * queue): `wait(ms)` resolves on `notify()`, on `close()`, on its signal's abort, or
 * after `ms` (null: no time limit). A waiter that read `generation` before looking for
 * work passes it to wait(), which then returns at once if a notify came in between:
 * a wake-up is never lost while the waiter was busy.
 */
export class WakeSignal {
  private readonly waiters = new Set<() => void>();
  private closed = false;
  private notified = 0;

  constructor(private readonly clock: Clock = systemClock) {}

  /** Wakes every waiter. */
  notify(): void {
    this.notified++;
    for (const w of [...this.waiters]) w();
  }

  /** Counts notify() calls. */
  get generation(): number {
    return this.notified;
  }

  /** Wakes every waiter, now and from now on. */
  close(): void {
    this.closed = true;
    this.notify();
  }

  get isClosed(): boolean {
    return this.closed;
  }

  wait(ms: number | null, signal?: AbortSignal, seenGeneration?: number): Promise<void> {
    if (this.closed || signal?.aborted) return Promise.resolve();
    if (seenGeneration !== undefined && seenGeneration !== this.notified) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        if (timer !== null) this.clock.clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        this.waiters.delete(done);
        resolve();
      };
      const timer = ms === null ? null : this.clock.setTimeout(done, ms);
      signal?.addEventListener('abort', done);
      this.waiters.add(done);
    });
  }
}
