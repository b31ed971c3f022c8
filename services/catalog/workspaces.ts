/**
 * A workspace's environment, as the catalog learns it: from
 * IdentityService.GetWorkspace once, then from its own `catalog.workspaces` table
 * and an in-memory map (an environment never changes, so nothing here expires).
 * Identity is therefore asked at most once per workspace, ever, per database.
 */
import { Code, ConnectError } from '@connectrpc/connect';
import { IdentityService } from '../../gen/psync/identity/v1/identity_pb';
import { environments } from '../kit/base';
import type { Sql } from '../kit/db';
import type { InternalClients } from '../kit/rpc';
import { workspaceNotFound } from './errors';
import { isUuid } from '../kit/base';

export type EnvironmentName = 'sandbox' | 'production';

export class WorkspaceDirectory {
  private readonly cache = new Map<string, EnvironmentName>();

  constructor(
    private readonly sql: Sql,
    private readonly clients: InternalClients,
    private readonly identityUrl: () => string,
  ) {}

  /**
   * The environment of `workspaceId` (lower-case UUID). NOT_FOUND
   * (WORKSPACE_NOT_FOUND) if identity does not know it; other identity failures
   * pass through (UNAVAILABLE etc.).
   */
  async environment(workspaceId: string): Promise<EnvironmentName> {
    const cached = this.cache.get(workspaceId);
    if (cached) return cached;
    if (!isUuid(workspaceId)) throw workspaceNotFound();
    const [row] = await this.sql<{ environment: EnvironmentName }[]>`
      select environment from catalog.workspaces where workspace_id = ${workspaceId}
    `;
    if (row) {
      this.cache.set(workspaceId, row.environment);
      return row.environment;
    }
    let env: EnvironmentName;
    try {
      const res = await this.clients.client(IdentityService, this.identityUrl()).getWorkspace({ workspaceId });
      const e = res.workspace ? environments.nameOf(res.workspace.environment) : undefined;
      if (!e) throw new ConnectError('identity returned a workspace without an environment', Code.Internal);
      env = e;
    } catch (err) {
      if (err instanceof ConnectError && err.code === Code.NotFound) throw workspaceNotFound();
      throw err;
    }
    await this.sql`
      insert into catalog.workspaces (workspace_id, environment) values (${workspaceId}, ${env})
      on conflict (workspace_id) do nothing
    `;
    this.cache.set(workspaceId, env);
    return env;
  }
}
