/**
 * Decompression bombs and their harmless look-alikes, for the photo memory tests and
 * bench/photo-memory.ts:
 * - claimSize(): a small real JPEG or PNG whose header is rewritten to claim other
 *   dimensions. The header says "huge" but the data is that of a small image, so a
 *   decoder that tried would fail (`not_an_image`): a `too_large` verdict proves the
 *   photo was judged on its header alone, without decoding.
 * - flat images of any size: one colour compresses to almost nothing (a 20000 x 20000
 *   PNG is ~1.2 MB, a 10000 x 10000 progressive JPEG under 1 MB), so they are real
 *   bombs: small on the wire, hundreds of megabytes decoded.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import sharp from 'sharp';

export type BombKind = 'progressive-jpeg' | 'baseline-jpeg' | 'interlaced-png' | 'png';

/** A one-colour image of `width` x `height` in the given layout (real pixels, any size). */
export async function flatImage(kind: BombKind, width: number, height: number, seed = 0): Promise<Buffer> {
  const img = sharp({
    create: { width, height, channels: 3, background: { r: (seed * 37 + 90) % 256, g: (seed * 59 + 120) % 256, b: (seed * 71 + 150) % 256 } },
    limitInputPixels: false,
  });
  switch (kind) {
    case 'progressive-jpeg':
      return img.jpeg({ quality: 80, progressive: true }).toBuffer();
    case 'baseline-jpeg':
      return img.jpeg({ quality: 80 }).toBuffer();
    case 'interlaced-png':
      return img.png({ progressive: true }).toBuffer();
    case 'png':
      return img.png({ compressionLevel: 9 }).toBuffer();
  }
}

/** The same bytes with the header claiming `width` x `height` (JPEG: the SOF segment; PNG: IHDR and its CRC). */
export function claimSize(image: Buffer, width: number, height: number): Buffer {
  const out = Buffer.from(image);
  if (out[0] === 0xff && out[1] === 0xd8) {
    let i = 2;
    while (i + 4 <= out.length && out[i] === 0xff) {
      const marker = out[i + 1]!;
      if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
        out.writeUInt16BE(height, i + 5);
        out.writeUInt16BE(width, i + 7);
        return out;
      }
      i += 2 + out.readUInt16BE(i + 2);
    }
    throw new Error('claimSize: no SOF segment found');
  }
  if (out.toString('latin1', 12, 16) === 'IHDR') {
    out.writeUInt32BE(width, 16);
    out.writeUInt32BE(height, 20);
    out.writeUInt32BE(crc32(out.subarray(12, 29)), 29);
    return out;
  }
  throw new Error('claimSize: neither JPEG nor PNG');
}

/** A small real image of `kind` whose header claims `width` x `height`. */
export async function headerBomb(kind: BombKind, width: number, height: number): Promise<Buffer> {
  return claimSize(await flatImage(kind, 640, 480, 7), width, height);
}

/**
 * `make()`'s bytes, generated once and kept under the system temporary directory
 * (`psync-photo-bombs/<name>`), so repeated benchmark runs skip the generation.
 */
export async function cachedImage(name: string, make: () => Promise<Buffer>): Promise<Buffer> {
  const dir = join(tmpdir(), 'psync-photo-bombs');
  const file = join(dir, name);
  if (existsSync(file)) return readFileSync(file);
  const body = await make();
  mkdirSync(dir, { recursive: true });
  writeFileSync(`${file}.tmp`, body);
  renameSync(`${file}.tmp`, file);
  return body;
}
