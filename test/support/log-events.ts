/**
 * Finding log lines by their stable `event` name (services/kit/base/log-events.ts),
 * never by their message: messages are written for people and may be reworded. The
 * names are typed, so a misspelt one fails type-checking instead of matching nothing.
 */
import type { LogEvent } from '../../services/kit/base';

/** One parsed JSON log line. */
export type LogLine = Record<string, any>;

function parsed(line: string | LogLine): LogLine | undefined {
  if (typeof line !== 'string') return line;
  try {
    const v = JSON.parse(line) as unknown;
    return v && typeof v === 'object' ? v : undefined;
  } catch {
    return undefined; // not a JSON log line
  }
}

/** The lines (raw JSON text or parsed) whose `event` is one of `events`, in order. */
export function logEvents(lines: readonly (string | LogLine)[], ...events: LogEvent[]): LogLine[] {
  const wanted = new Set<string>(events);
  const out: LogLine[] = [];
  for (const l of lines) {
    const line = parsed(l);
    if (line && wanted.has(line.event as string)) out.push(line);
  }
  return out;
}

/** The first line whose `event` is `event`, or undefined. */
export function firstLogEvent(lines: readonly (string | LogLine)[], event: LogEvent): LogLine | undefined {
  return logEvents(lines, event)[0];
}

/**
 * Matches a raw line carrying `event`: a JSON line, or a LOG_FORMAT=pretty one (which
 * prints the fields as JSON after the message). For waiting on a process's output.
 */
export function eventPattern(event: LogEvent): RegExp {
  return new RegExp(`"event":"${event.replace(/\./g, '\\.')}"`);
}
