/**
 * Start-up sweep of a SECRETS_ENCRYPTION_KEY rotation: every stored signing secret
 * (current and previous of an overlap) that only SECRETS_ENCRYPTION_KEY_PREVIOUS opens
 * is re-encrypted under SECRETS_ENCRYPTION_KEY.
 *
 * Bounded: one endpoint row per workspace, read in keyset pages of PAGE rows; each
 * update is a compare-and-set on the old ciphertext, so a rotation or registration
 * that wrote the row meanwhile (always under the current key) is left alone. Secrets
 * are never logged; the caller logs the counts.
 */
import type { Sql } from '../kit/db';
import { SecretDecryptionError, type SecretBox } from './secret-box';

const PAGE = 500;

export interface ResealResult {
  /** Ciphertexts moved from the previous key to the current one. */
  resealed: number;
  /** Ciphertexts neither key opens (they stay as they are). */
  unreadable: number;
}

interface Row {
  workspace_id: string;
  secret_ciphertext: Buffer;
  previous_secret_ciphertext: Buffer | null;
}

export async function resealSecrets(sql: Sql, box: SecretBox): Promise<ResealResult> {
  const result: ResealResult = { resealed: 0, unreadable: 0 };
  const reseal = (stored: Buffer, ws: string): Buffer | undefined => {
    try {
      return box.resealIfPrevious(stored, ws);
    } catch (err) {
      if (!(err instanceof SecretDecryptionError)) throw err;
      result.unreadable++;
      return undefined;
    }
  };
  let after = '00000000-0000-0000-0000-000000000000';
  for (;;) {
    const rows = await sql<Row[]>`
      select workspace_id, secret_ciphertext, previous_secret_ciphertext
        from notifications.endpoints where workspace_id > ${after}::uuid order by workspace_id limit ${PAGE}`;
    for (const row of rows) {
      result.resealed += await resealColumn(sql, row.workspace_id, 'secret_ciphertext', row.secret_ciphertext, reseal);
      if (row.previous_secret_ciphertext) {
        result.resealed += await resealColumn(sql, row.workspace_id, 'previous_secret_ciphertext', row.previous_secret_ciphertext, reseal);
      }
    }
    if (rows.length < PAGE) return result;
    after = rows[rows.length - 1]!.workspace_id;
  }
}

/** Writes the re-encrypted `stored` if it changed and the row still holds it; 1 if written. */
async function resealColumn(
  sql: Sql,
  workspaceId: string,
  column: 'secret_ciphertext' | 'previous_secret_ciphertext',
  stored: Buffer,
  reseal: (stored: Buffer, ws: string) => Buffer | undefined,
): Promise<number> {
  const next = reseal(stored, workspaceId);
  if (!next) return 0;
  const n = await sql`
    update notifications.endpoints set ${sql(column)} = ${next}
     where workspace_id = ${workspaceId} and ${sql(column)} = ${stored}`;
  return n.count;
}
