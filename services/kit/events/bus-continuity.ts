/**
 * Continuity of the in-process bus across runs (embedded default).
 *
 * The in-process bus keeps its log in memory, and the outbox marks a row published
 * once the bus has it. A run that ends with events handed to the bus but not yet
 * handled by their consumer (a crash, a kill, or a shutdown that came too soon) would
 * lose them. So a run that ends DRAINED (bus.drained(): every event handled) leaves a
 * marker file, `DATA_DIR/bus/drained`; the next start takes it away, and when it
 * was not there, every retained published outbox row (7 days) is published again.
 * Consumers dedupe on the event id (processed_events), so what they had
 * handled is skipped and nothing is handled twice. With NATS none of this runs:
 * JetStream stores an event before the outbox marks it.
 */
import { mkdirSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '../base';
import { PRIVATE_DIR_MODE } from '../base';

function markerPath(dataDir: string): string {
  return join(dataDir, 'bus', 'drained');
}

/**
 * True when the previous run ended drained; removes the marker, so a crash of THIS
 * run is detected at the next start.
 */
export function takeDrainedMarker(dataDir: string): boolean {
  const path = markerPath(dataDir);
  const present = existsSync(path);
  rmSync(path, { force: true });
  return present;
}

/** Records that this run ended drained; a failure costs only a replay at the next start. */
export function writeDrainedMarker(dataDir: string, log: Logger): void {
  try {
    mkdirSync(join(dataDir, 'bus'), { recursive: true, mode: PRIVATE_DIR_MODE });
    writeFileSync(markerPath(dataDir), `${new Date().toISOString()}\n`, { mode: 0o600 });
  } catch (err) {
    log.warn({ err }, 'in-process bus: could not record a drained shutdown; the next start re-publishes retained events');
  }
}
