import { commands } from './command-set';
import { helpText } from './help';
import { resolveCommand } from './registry';

const INSTANCE = 'urn:psync:request:3f1c5f0e-8d2b-4c53-9a61-2b1f2e7c9d40';

describe('psync request show|list', () => {
  test('`request show <instance>`: the trailing word is --instance; other commands take no trailing word', () => {
    const resolved = resolveCommand(commands, ['request', 'show', INSTANCE]);
    expect([resolved?.name, resolved?.positional]).toEqual(['request show', { flag: 'instance', value: INSTANCE }]);
    expect(resolveCommand(commands, ['request', 'show'])?.positional).toBeUndefined();
    expect(resolveCommand(commands, ['workspace', 'show', 'x'])).toBeUndefined();
    expect(resolveCommand(commands, ['request'])).toBeUndefined();
  });

  test('show takes the instance of a problem document or the bare X-Request-Id, nothing else', () => {
    const show = commands['request show']!;
    expect(show.problems(new Map([['instance', INSTANCE]]))).toEqual([]);
    expect(show.problems(new Map([['instance', INSTANCE.slice('urn:psync:request:'.length).toUpperCase()]]))).toEqual([]);
    for (const bad of ['urn:psync:request:nope', 'https://x/3f1c5f0e-8d2b-4c53-9a61-2b1f2e7c9d40', '']) {
      expect([bad, show.problems(new Map([['instance', bad]]))]).toEqual([bad, [expect.stringMatching(/^the instance must be urn:psync:request:<uuid>/)]]);
    }
    expect(show.problems(new Map())).toEqual(['missing --instance']);
    expect(helpText(commands, ['request', 'show']).split('\n')[0]).toBe('usage: psync request show (INSTANCE | --instance INSTANCE)');
  });

  test('list: --workspace required; --status, --code, --limit and --after checked before anything is called', () => {
    const list = commands['request list']!;
    expect(list.problems(new Map([['workspace', '8a5e2c61-1f3b-4d7e-9c0a-6b2d4e8f1a37']]))).toEqual([]);
    expect(
      list.problems(
        new Map([
          ['workspace', 'w'],
          ['status', '42'],
          ['code', 'Bad'],
          ['limit', '201'],
          ['after', 'x'],
        ]),
      ),
    ).toEqual([
      expect.stringMatching(/^--workspace must be/),
      '--status must be an HTTP status, 100 to 599',
      '--code must be a problem code such as validation_failed',
      '--limit must be 1 to 200',
      expect.stringMatching(/^--after must be a next_cursor/),
    ]);
    expect(list.columns).toEqual(['instance', 'received_at', 'method', 'route', 'status', 'code', 'duration_ms']);
  });
});
