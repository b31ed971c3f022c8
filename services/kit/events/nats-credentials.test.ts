import { anonymousRemoteServers, isLoopbackHost } from './nats-credentials';

describe('anonymousRemoteServers: an anonymous connection off loopback is what the bus warns about', () => {
  test.each([
    ['nats://127.0.0.1:4222', []],
    ['nats://localhost:4222', []],
    ['nats://[::1]:4222', []],
    ['nats://127.8.9.10:4222', []],
    ['nats://nats:4222', ['nats://nats:4222']],
    ['nats://10.0.0.5:4222', ['nats://10.0.0.5:4222']],
    ['nats://127.0.0.1:4222,nats://nats-1.nats:4222', ['nats://nats-1.nats:4222']],
    ['tls://nats.example.com:4222', ['tls://nats.example.com:4222']],
    ['nats://[2001:db8::1]:4222', ['nats://[2001:db8::1]:4222']],
  ])('no credentials: %s → %j', (url, expected) => {
    expect(anonymousRemoteServers(url, undefined)).toEqual(expected);
  });

  test('a user and password, a token, or a .creds file is not anonymous', () => {
    expect(anonymousRemoteServers('nats://calendar:secret@nats:4222', undefined)).toEqual([]);
    expect(anonymousRemoteServers('nats://s3cr3t-token@nats:4222', undefined)).toEqual([]);
    expect(anonymousRemoteServers('nats://nats:4222', '/etc/psync/nats/calendar.creds')).toEqual([]);
  });

  test('loopback names and addresses', () => {
    expect(['localhost', 'LOCALHOST', 'x.localhost', '127.0.0.1', '[::1]', '::1', '::ffff:127.0.0.1'].map(isLoopbackHost)).toEqual(Array(7).fill(true));
    expect(['nats', '10.0.0.1', '128.0.0.1', 'localhost.example.com', '[::2]', '0.0.0.0'].map(isLoopbackHost)).toEqual(Array(6).fill(false));
  });
});
