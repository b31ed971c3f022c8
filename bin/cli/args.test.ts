import { parseArgs, UsageError } from './args';

const switches = (words: string[]) => new Set(words.join(' ') === 'client list' ? ['all'] : []);

describe('psync argument parsing', () => {
  test('words, then flags with values (`--f v` and `--f=v`)', () => {
    expect(parseArgs(['key', 'issue', '--workspace', 'w', '--x=y'])).toEqual({
      words: ['key', 'issue'],
      flags: new Map([['workspace', 'w'], ['x', 'y']]),
      help: false,
    });
  });

  test('--help and -h anywhere after the words, with or without other flags; never a flag of the command', () => {
    for (const argv of [['--help'], ['key', '--help'], ['key', 'issue', '-h'], ['key', 'issue', '--workspace', 'w', '--help'], ['key', 'issue', '--help', '--workspace', 'w']]) {
      const parsed = parseArgs(argv);
      expect(parsed.help).toBe(true);
      expect(parsed.flags.has('help')).toBe(false);
    }
  });

  test('`--name --help` asks for help instead of naming something "--help"', () => {
    const parsed = parseArgs(['workspace', 'create', '--name', '--help']);
    expect(parsed.help).toBe(true);
    expect(parsed.flags.has('name')).toBe(false);
  });

  test("a command's switches take no value; other flags need one", () => {
    expect(parseArgs(['client', 'list', '--all'], switches).flags.get('all')).toBe('true');
    expect(() => parseArgs(['client', 'list', '--all=yes'], switches)).toThrow(new UsageError('--all takes no value'));
    expect(() => parseArgs(['migrate', '--all'], switches)).toThrow(new UsageError('--all needs a value'));
    expect(() => parseArgs(['migrate', '--help=yes'])).toThrow(UsageError);
  });

  test('usage errors name the flag', () => {
    expect(() => parseArgs(['migrate', '--bogus'])).toThrow('--bogus needs a value');
    expect(() => parseArgs(['key', 'issue', '--workspace', 'a', '--workspace', 'b'])).toThrow('--workspace given twice');
    expect(() => parseArgs(['key', '--workspace', 'a', 'issue'])).toThrow('unexpected argument "issue" after flags');
  });
});
