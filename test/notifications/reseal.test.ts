import { randomBytes, randomUUID } from 'node:crypto';
import { notificationsModule } from '../../services/notifications/module';
import { runMigrations } from '../../services/kit/db';
import { KIT_MIGRATIONS } from '../../services/kit/db';
import { resealSecrets } from '../../services/notifications/reseal';
import { mintSigningSecret, SecretBox } from '../../services/notifications/secret-box';
import { startTestDatabase, type TestDatabase } from '../support/database';

let db: TestDatabase;
beforeAll(async () => {
  db = await startTestDatabase();
  await runMigrations(db.sql, { schema: 'notifications', sources: [KIT_MIGRATIONS, notificationsModule.migrations] });
}, 60_000);
afterAll(async () => db?.stop());

test('the start-up sweep re-encrypts secrets under the previous key (current and overlap), leaves current ones, counts unreadable ones', async () => {
  const sql = db.sql;
  const oldKey = randomBytes(32);
  const newKey = randomBytes(32);
  const oldBox = new SecretBox(oldKey);
  const box = new SecretBox(newKey, oldKey);
  const rows = [randomUUID(), randomUUID(), randomUUID()].map((ws, i) => ({ ws, secret: mintSigningSecret(), previous: mintSigningSecret(), i }));
  for (const r of rows) {
    const sealer = r.i === 1 ? box : r.i === 2 ? new SecretBox(randomBytes(32)) : oldBox;
    await sql`insert into notifications.endpoints (workspace_id, url, events, status, secret_ciphertext, previous_secret_ciphertext, previous_valid_until)
      values (${r.ws}, 'https://example.com/hook', ${sql.array(['booking'])}::text[], 'active', ${sealer.seal(r.secret, r.ws)},
              ${r.i === 0 ? oldBox.seal(r.previous, r.ws) : null}, ${r.i === 0 ? new Date(Date.now() + 3600_000) : null})`;
  }
  expect(await resealSecrets(sql, box)).toEqual({ resealed: 2, unreadable: 1 });
  const after = new SecretBox(newKey);
  const [r0] = await sql`select secret_ciphertext, previous_secret_ciphertext from notifications.endpoints where workspace_id = ${rows[0]!.ws}`;
  expect(after.open(r0!.secret_ciphertext, rows[0]!.ws)).toBe(rows[0]!.secret);
  expect(after.open(r0!.previous_secret_ciphertext, rows[0]!.ws)).toBe(rows[0]!.previous);
  const [r1] = await sql`select secret_ciphertext from notifications.endpoints where workspace_id = ${rows[1]!.ws}`;
  expect(after.open(r1!.secret_ciphertext, rows[1]!.ws)).toBe(rows[1]!.secret);
  // Idempotent: a second start finds nothing left under the old key.
  expect(await resealSecrets(sql, box)).toEqual({ resealed: 0, unreadable: 1 });
}, 60_000);
