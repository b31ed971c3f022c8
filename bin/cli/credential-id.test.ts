import { credentialIdCheck } from './credential-id';

describe('credentialIdCheck', () => {
  const key = credentialIdCheck({ flag: 'key', id: 'key id', prefix: 'psk_', whole: 'API key' });
  const client = credentialIdCheck({ flag: 'client', id: 'client id', prefix: 'psmc_', whole: 'token' });

  it('accepts a bare id', () => {
    expect(key('abcdefghijklmnop')).toBeUndefined();
    expect(client('a2b3c4d5e6f7g2h3')).toBeUndefined();
  });

  it('refuses a whole credential without echoing it', () => {
    const problem = key('psk_abcdefghijklmnop_secret');
    expect(problem).toBe('--key takes the key id (the 16 characters after "psk_"), not the whole API key');
    expect(client('psmc_abcdefghijklmnop_secret')).toBe('--client takes the client id (the 16 characters after "psmc_"), not the whole token');
  });

  it('refuses anything else, naming the command that prints ids', () => {
    expect(key('ABCDEFGHIJKLMNOP')).toBe('--key must be a key id: 16 characters a-z and 2-7, as printed by `psync key issue`');
    expect(client('short')).toBe('--client must be a client id: 16 characters a-z and 2-7, as printed by `psync client issue`');
  });
});
