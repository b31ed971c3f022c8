/**
 * What every page reads from the signed-in shell: the session and `api`, which runs a
 * call of the SDK's client and then publishes the quota its answer stated (success or
 * failure alike), so the header's "requests left" follows every request the page makes.
 */
import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { PartnerClient } from '../../packages/partner-sdk/src/client';
import type { Session } from './session';

export interface Console {
  session: Session;
  api: <T>(call: (client: PartnerClient) => Promise<T>) => Promise<T>;
}

export const ConsoleContext = createContext<Console | undefined>(undefined);

export function useConsole(): Console {
  const c = useContext(ConsoleContext);
  if (!c) throw new Error('useConsole outside the signed-in shell');
  return c;
}
