/**
 * A terminal a person types documentation commands into: one long-lived bash reading
 * the commands from a pipe, so variables set by one block are there for the next, as
 * in a real terminal. stdout and stderr are kept together, as a terminal shows them.
 *
 * A block is written as it is (pasted). Two things are added around it, never inside:
 * - at start-up `set -o pipefail` and an ERR trap, so that any command of a block that
 *   fails — including the first command of a pipe, or `VAR=$(failing)` — fails the
 *   block (a person would see its error message; a test needs the exit status);
 * - after a foreground block, an `echo` of a marker that says the block has finished.
 * A background block (a server a person leaves running) gets no marker: the caller
 * waits for the text the documentation tells the person to wait for.
 *
 * bash runs in its own process group; `close()` ends the group (SIGTERM, then SIGKILL),
 * servers started in it included.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';

export class Terminal {
  private readonly child: ChildProcess;
  private text = '';
  private readonly token = randomBytes(6).toString('hex');
  private readonly listeners = new Set<() => void>();
  private exited = false;
  /** A background block is running: nothing more can be typed here. */
  private busy = false;

  constructor(
    readonly name: string,
    cwd: string,
    env: Record<string, string>,
  ) {
    this.child = spawn('bash', ['--noprofile', '--norc'], { cwd, env, detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
    for (const stream of [this.child.stdout!, this.child.stderr!]) {
      stream.setEncoding('utf8');
      stream.on('data', (chunk: string) => {
        this.text += chunk;
        for (const l of [...this.listeners]) l();
      });
    }
    this.child.once('exit', () => {
      this.exited = true;
      for (const l of [...this.listeners]) l();
    });
    this.child.stdin!.write(`set -o pipefail\ntrap 'echo "ERR-${this.token} status $? from: $BASH_COMMAND" >&2' ERR\n`);
  }

  /** Everything shown so far (from offset `from`). */
  output(from = 0): string {
    return this.text.slice(from);
  }

  /** Runs a foreground block; resolves with what it printed; rejects if any command failed or `timeoutMs` passed. */
  async run(code: string, timeoutMs: number): Promise<string> {
    if (this.busy) throw new Error(`${this.name}: a background block is still running here`);
    const from = this.text.length;
    const done = `DONE-${this.token}-${from}`;
    this.child.stdin!.write(`${code.endsWith('\n') ? code : `${code}\n`}echo "${done} $?"\n`);
    await this.waitFor(new RegExp(`${done} \\d+`), from, timeoutMs, 'the end of the block');
    const shown = this.output(from);
    const printed = shown.slice(0, shown.indexOf(done));
    const failure = new RegExp(`ERR-${this.token} (.*)`).exec(printed);
    if (failure) throw new Error(`${this.name}: a command failed (${failure[1]}); the block printed:\n${printed}`);
    return printed;
  }

  /** Starts a background block (a server left running); resolves with the output offset it started at. */
  start(code: string): number {
    if (this.busy) throw new Error(`${this.name}: a background block is still running here`);
    const from = this.text.length;
    this.busy = true;
    this.child.stdin!.write(code.endsWith('\n') ? code : `${code}\n`);
    return from;
  }

  /** Resolves with the output from `from` once it contains `pattern`; rejects on time-out or when bash exited. */
  waitFor(pattern: string | RegExp, from: number, timeoutMs: number, what = String(pattern)): Promise<string> {
    const found = () => (typeof pattern === 'string' ? this.output(from).includes(pattern) : pattern.test(this.output(from)));
    return new Promise((resolve, reject) => {
      const check = () => {
        if (found()) {
          finish();
          resolve(this.output(from));
        } else if (this.exited) {
          finish();
          reject(new Error(`${this.name}: bash exited before ${what}; it printed:\n${this.output(from).slice(-4000)}`));
        }
      };
      const timer = setTimeout(() => {
        finish();
        reject(new Error(`${this.name}: no ${what} within ${timeoutMs} ms; it printed:\n${this.output(from).slice(-4000)}`));
      }, timeoutMs);
      const finish = () => {
        clearTimeout(timer);
        this.listeners.delete(check);
      };
      this.listeners.add(check);
      check();
    });
  }

  /** Ends everything started in this terminal: SIGTERM to the process group, SIGKILL to what is left after `graceMs`. */
  async close(graceMs = 20_000): Promise<void> {
    const group = this.child.pid!;
    const signal = (s: NodeJS.Signals | 0): boolean => {
      try {
        process.kill(-group, s);
        return true;
      } catch {
        return false; // no process of the group is left
      }
    };
    signal('SIGTERM');
    // bash exits at once; the servers it started drain first (SIGTERM is their clean stop).
    const deadline = Date.now() + graceMs;
    while (signal(0) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    signal('SIGKILL');
  }
}

/** Variables of the test's own environment a person's shell has too. */
const PASSED_THROUGH = [
  'HOME',
  'USER',
  'LOGNAME',
  'SHELL',
  'LANG',
  'LC_ALL',
  'TZ',
  'TMPDIR',
  'NODE_EXTRA_CA_CERTS',
  'HTTP_PROXY',
  'HTTPS_PROXY',
  'NO_PROXY',
  'http_proxy',
  'https_proxy',
  'no_proxy',
];

/**
 * The environment of a person's fresh shell: the test's PATH without this working
 * tree's node_modules/.bin (which `npm test` adds), the few variables above, and
 * `extra`. Nothing else: no DATABASE_URL or NATS_URL (the documentation describes the
 * embedded default), no npm_* variables of the `npm test` that runs Jest.
 */
export function shellEnvironment(root: string, extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const k of PASSED_THROUGH) if (process.env[k] !== undefined) env[k] = process.env[k]!;
  env.PATH = (process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin')
    .split(':')
    .filter((p) => p !== '' && !p.startsWith(`${root}/`) && !p.includes('node_modules'))
    .join(':');
  return { ...env, ...extra };
}
