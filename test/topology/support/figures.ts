/**
 * The figures of one fault, as `npm run test:topology` prints them and docs/operations.md
 * publishes them. A topology test measures them while its fault happens under traffic,
 * records them here (one JSON file per fault in .tmp/topology/), and asserts the zeros
 * itself; test/topology/run.ts prints every recorded fault as one table after Jest.
 */
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const FIGURES_DIR = join(__dirname, '..', '..', '..', '.tmp', 'topology');

export interface FaultFigures {
  /** Stable name of the fault, e.g. `nats-leader-lost`, `postgres-failover`. */
  fault: string;
  /** What ran during the fault (e.g. "3 partners, 40 block pushes/s, 5 bookings/s"). */
  load: string;
  /** Acknowledged writes or published events missing afterwards. */
  lost: number;
  /** Webhook deliveries (or events) seen more than once per event_id. */
  duplicated: number;
  /** Nights sold twice. */
  doubleSold: number;
  /** Public answers during the fault by status (e.g. {"200": 1234, "503": 12}); any 5xx but 503 is a failure. */
  statuses: Record<string, number>;
  /** Seconds from the fault until the system served normally again. */
  recoverySeconds: number;
  /** Any further measurement worth publishing (publish stall, lag, …), by name. */
  extra?: Record<string, number | string>;
}

/** Non-503 server errors (and dropped exchanges, status 0) among `statuses`. */
export function non503Errors(statuses: Record<string, number>): number {
  return Object.entries(statuses)
    .filter(([status]) => status === '0' || (Number(status) >= 500 && status !== '503'))
    .reduce((sum, [, n]) => sum + n, 0);
}

export function recordFigures(figures: FaultFigures): void {
  mkdirSync(FIGURES_DIR, { recursive: true });
  writeFileSync(join(FIGURES_DIR, `${figures.fault}.json`), `${JSON.stringify(figures, null, 2)}\n`);
}

export function recordedFigures(): FaultFigures[] {
  let names: string[];
  try {
    names = readdirSync(FIGURES_DIR).filter((n) => n.endsWith('.json'));
  } catch {
    return [];
  }
  return names.sort().map((n) => JSON.parse(readFileSync(join(FIGURES_DIR, n), 'utf8')) as FaultFigures);
}

/** Removes earlier runs' figures, so the table shows only this run. */
export function clearFigures(): void {
  mkdirSync(FIGURES_DIR, { recursive: true });
  for (const n of readdirSync(FIGURES_DIR)) if (n.endsWith('.json')) rmSync(join(FIGURES_DIR, n));
}
