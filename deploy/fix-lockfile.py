#!/usr/bin/env python3
"""Restores lockfile entries for other platforms' optional native binaries.

The registry reachable from our machines serves only the linux-x64 builds of packages
such as @bufbuild/buf-*, @swc/core-* and @unrs/resolver-binding-*. `npm install`
then leaves those optional dependencies out of package-lock.json, and `npm ci`
refuses the lock ("Missing: … from lock file"). This script adds each missing
entry as an optional, platform-restricted package (os/cpu/libc from its name), which
`npm ci` skips on Linux x64 without fetching it.

Run after any `npm install`:  python3 deploy/fix-lockfile.py
"""
import json, re, subprocess

out = subprocess.run(['npm', 'ci', '--dry-run', '--ignore-scripts'], capture_output=True, text=True)
missing = re.findall(r'Missing: (\S+?)@\S* from lock file', out.stdout + out.stderr)
lock = json.load(open('package-lock.json'))
pk = lock['packages']

def platform(name):
    n = name.split('/')[-1]
    os_ = next((o for o in ['darwin', 'win32', 'linux', 'android', 'freebsd', 'openharmony'] if o in n), 'win32' if 'windows' in n else None)
    cpu = next((c for k, c in [('arm64', 'arm64'), ('aarch64', 'arm64'), ('x64', 'x64'), ('armv7', 'arm'), ('arm-', 'arm'),
                               ('ia32', 'ia32'), ('ppc64', 'ppc64'), ('s390x', 's390x'), ('riscv64', 'riscv64'), ('loong64', 'loong64')] if k in n), None)
    libc = 'glibc' if (n.endswith('-gnu') or 'gnueabihf' in n) else 'musl' if (n.endswith('-musl') or 'musleabihf' in n) else None
    return os_, cpu, libc

for name in missing:
    parent = next(v for v in pk.values() if name in v.get('optionalDependencies', {}))
    # A lock entry names one version: the lowest the range allows (`^0.1.0` -> `0.1.0`).
    entry = {'version': re.sub(r'^[\^~>=\s]+', '', parent['optionalDependencies'][name]), 'optional': True}
    if parent.get('dev'):
        entry['dev'] = True
    os_, cpu, libc = platform(name)
    for key, val in (('os', os_), ('cpu', cpu), ('libc', libc)):
        if val:
            entry[key] = [val]
    pk['node_modules/' + name] = entry
lock['packages'] = dict(sorted(pk.items()))
with open('package-lock.json', 'w') as f:
    json.dump(lock, f, indent=2)
    f.write('\n')
print(f'added {len(missing)} optional platform entries')
