/**
 * Which TCP addresses a process listens on, read from /proc (Linux): what a port
 * scanner on the machine would find, without scanning.
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/** Local addresses (`ip:port`) of the TCP sockets `pid` listens on, from /proc. */
export function listeningAddresses(pid: number): string[] {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) inodes.add(m[1]!);
    } catch {
      // closed meanwhile
    }
  }
  const out: string[] = [];
  for (const table of ['tcp', 'tcp6']) {
    for (const line of readFileSync(`/proc/${pid}/net/${table}`, 'utf8').split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 10 || f[3] !== '0A' || !inodes.has(f[9]!)) continue;
      const [hex, port] = f[1]!.split(':') as [string, string];
      const ip =
        table === 'tcp'
          ? Buffer.from(hex, 'hex').reverse().join('.')
          : hex === '00000000000000000000000000000000'
            ? '::'
            : hex === '0000000000000000FFFF00000100007F'
              ? '::ffff:127.0.0.1'
              : hex;
      out.push(`${ip}:${parseInt(port, 16)}`);
    }
  }
  return out.sort();
}
