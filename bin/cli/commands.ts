/**
 * The psync commands. Each takes its parsed flags and the internal API clients and
 * returns the one JSON object to print. Commands arrive with the issues that own
 * their behaviour; operator-interface.md lists the full set.
 */
import type { InternalClients } from '../../services/kit/internal-client';
import { AdminService } from '../../gen/psync/admin/v1/admin_pb';
import { takeFlags } from './args';

export interface CommandContext {
  flags: Map<string, string>;
  clients: InternalClients;
  /** PSYNC_INTERNAL_URL. */
  baseUrl: string;
}

export type Command = (ctx: CommandContext) => Promise<Record<string, unknown>>;

export const commands: Record<string, Command> = {
  /** Runs every hosted service's pending migrations in the running system (idempotent). */
  async migrate({ flags, clients, baseUrl }) {
    takeFlags(flags, []);
    const res = await clients.client(AdminService, baseUrl).migrate({});
    return { migrated: res.migrated, schemas: res.schemas };
  },
};
