/**
 * Every psync command by its words, in the order `psync help` lists them.
 */
import { clientCommands } from './client-commands';
import { operationCommands as op } from './commands';
import type { Command } from './registry';
import { requestCommands } from './request-commands';
import { showCommands as show } from './show-commands';

export const commands: Readonly<Record<string, Command>> = {
  migrate: op.migrate!,
  'workspace create': op['workspace create']!,
  'workspace show': show['workspace show']!,
  'key issue': op['key issue']!,
  'key revoke': op['key revoke']!,
  ...clientCommands,
  'listing create': op['listing create']!,
  'property show': show['property show']!,
  'amenities list': show['amenities list']!,
  'hold place': op['hold place']!,
  'hold release': op['hold release']!,
  'booking confirm': op['booking confirm']!,
  'booking cancel': op['booking cancel']!,
  'booking show': show['booking show']!,
  'user erase': op['user erase']!,
  'webhook show': show['webhook show']!,
  'webhook health': show['webhook health']!,
  'webhook rotate-secret': op['webhook rotate-secret']!,
  'deliveries list': op['deliveries list']!,
  'deliveries show': show['deliveries show']!,
  'deliveries replay': op['deliveries replay']!,
  'deletion-requests list': op['deletion-requests list']!,
  ...requestCommands,
};
