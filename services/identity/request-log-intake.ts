/**
 * What RecordRequests does with a batch of the gateway's records (docs/operations.md
 * "Request log"): a batch carries many workspaces' requests, so a record that cannot
 * be stored is refused alone and the others are stored: one partner's request can
 * never cost another tenant its records.
 *
 * - Each record is checked on its own, with the rules the interceptors would have
 *   applied to it (identity.proto leaves the items of RecordRequestsRequest.requests
 *   to the handler): text that can be stored (request-guard.ts) and the .proto rules
 *   (validation.ts). A record breaking either is refused.
 * - The others go in one statement. Should the database still refuse it for a value
 *   (SQLSTATE class 22, data exception, or 23, a constraint), each record is tried in
 *   a statement of its own, and only those the database refuses are refused. A lost
 *   connection is not a record's fault: it fails the call (the gateway counts the batch).
 */
import type { RecordedRequest } from '../../gen/psync/identity/v1/identity_pb';
import { RecordedRequestSchema } from '../../gen/psync/identity/v1/identity_pb';
import type { Sql } from '../kit/db';
import { sqlState, type Violation } from '../kit/rpc';
import { requestViolations } from '../kit/rpc';
import { ruleViolations } from '../kit/rpc';
import { insertRequests, type RequestRecord } from './request-log';

/** A refused record: its place in the batch and why (field paths and codes, never a value). */
export interface RefusedRecord {
  index: number;
  /** `{field, code}` of the record's broken rules, or the SQLSTATE the database answered. */
  reason: Violation[] | { sqlState: string };
}

export interface Intake {
  /** Records newly stored (a request id already kept is not). */
  recorded: number;
  refused: RefusedRecord[];
}

/** What is wrong with one record, in the interceptors' terms; `[]` when it can be stored. */
export function recordViolations(r: RecordedRequest): Violation[] {
  const text = requestViolations(RecordedRequestSchema, r);
  return text.length > 0 ? text : ruleViolations(RecordedRequestSchema, r).violations;
}

/** True for a refusal of a value (class 22 or 23), which one record can cause. */
function refusedForAValue(err: unknown): string | undefined {
  const state = sqlState(err);
  return state !== undefined && (state.startsWith('22') || state.startsWith('23')) ? state : undefined;
}

/**
 * Stores the records of `batch` that can be stored; `toRow` turns a checked message
 * into the row request-log.ts inserts.
 */
export async function takeIn(sql: Sql, batch: readonly RecordedRequest[], toRow: (r: RecordedRequest) => RequestRecord): Promise<Intake> {
  const refused: RefusedRecord[] = [];
  const accepted: { index: number; row: RequestRecord }[] = [];
  batch.forEach((r, index) => {
    const violations = recordViolations(r);
    if (violations.length > 0) refused.push({ index, reason: violations });
    else accepted.push({ index, row: toRow(r) });
  });
  if (accepted.length === 0) return { recorded: 0, refused };
  try {
    return {
      recorded: await insertRequests(
        sql,
        accepted.map((a) => a.row),
      ),
      refused,
    };
  } catch (err) {
    if (refusedForAValue(err) === undefined) throw err;
  }
  let recorded = 0;
  for (const { index, row } of accepted) {
    try {
      recorded += await insertRequests(sql, [row]);
    } catch (err) {
      const state = refusedForAValue(err);
      if (state === undefined) throw err;
      refused.push({ index, reason: { sqlState: state } });
    }
  }
  refused.sort((a, b) => a.index - b.index);
  return { recorded, refused };
}
