/**
 * What decoding a photo will cost in memory, known from its header before any pixel
 * is decoded, and the bounds that follow from it (docs/catalog.md "Memory bounds").
 *
 * libvips decodes baseline JPEG, non-interlaced PNG and WebP as a stream of rows, so
 * their cost hardly depends on the image (measured: 32 MB for 12 MP, 41 MB for a
 * 100-MP baseline JPEG, 76 MB for a 100-MP PNG). Two layouts cannot be streamed:
 * - a progressive (or any multi-scan) JPEG: libjpeg keeps every DCT coefficient of
 *   the whole image, two bytes per sample, until the last scan has arrived (a
 *   10000 x 10000 4:2:0 progressive JPEG of 880 KB: +328 MB);
 * - an interlaced (Adam7) PNG: decoded whole into memory, channels x sample bytes per
 *   pixel (10000 x 10000 RGB: +346 MB).
 * WebP with alpha keeps the whole alpha plane (one byte per pixel).
 *
 * The estimate: a working set of WORKING_SET_BYTES (the resize and the WebP encode of
 * the derivative), half a byte per source pixel per sample byte (rows in flight
 * through shrink and resize), plus the whole-image buffer of the layouts above.
 * Calibrated with sharp 0.35 / libvips 8.18 on the images listed in docs/catalog.md;
 * it is above every measured peak (by 0-50 %).
 */
import type sharp from 'sharp';

const MiB = 1024 * 1024;

/**
 * The per-process decode budget: the estimates of the decodes in flight add up to
 * at most this, whatever PHOTO_CONCURRENCY is. 256 MiB keeps the catalog container
 * (1 GiB limit; the whole all-in-one idles at ~200 MB on PostgreSQL) clear of its
 * limit with the fetched bodies (PHOTO_CONCURRENCY x 25 MiB at most) and the
 * allocator's retention besides (docs/catalog.md "Memory bounds"), and lets about
 * seven ordinary photos (~36 MB each) decode at once.
 */
export const DECODE_BUDGET_BYTES = 256 * MiB;

/**
 * Pixel ceiling of progressive JPEG and interlaced PNG, below the general 100 MP:
 * their decode holds the whole image. 50 MP is above any camera's default output
 * but the few medium-format ones; a 50-MP 4:2:0 progressive JPEG is estimated at
 * ~210 MB, so ordinary photos still decode beside it.
 */
export const PROGRESSIVE_MAX_PIXELS = 50_000_000;

/** Working set of every decode: the resize and the WebP encode of a derivative of at most 2048 px. */
export const WORKING_SET_BYTES = 32 * MiB;

/** The header facts the estimate uses (sharp's metadata(), which decodes no pixels). */
export type DecodeHeader = Pick<sharp.Metadata, 'format' | 'width' | 'height' | 'channels' | 'depth' | 'isProgressive' | 'hasAlpha' | 'bitsPerSample'>;

/** True for the layouts whose decoder holds the whole image: progressive/multi-scan JPEG, interlaced PNG. */
export function decodesWhole(h: DecodeHeader): boolean {
  return (h.format === 'jpeg' || h.format === 'png') && h.isProgressive === true;
}

const sampleBytes = (h: DecodeHeader) => (h.bitsPerSample === 16 || h.depth === 'ushort' ? 2 : 1);

/**
 * Bytes of the DCT coefficient buffer libjpeg allocates for a multi-scan JPEG
 * (jdcoefct.c: per component, blocks rounded up to whole MCUs, 64 coefficients of 2
 * bytes each), read from the SOF segment; undefined when no SOF is found.
 */
export function jpegCoefficientBytes(body: Buffer): number | undefined {
  let i = 2;
  if (body[0] !== 0xff || body[1] !== 0xd8) return undefined;
  while (i + 4 <= body.length) {
    if (body[i] !== 0xff) return undefined;
    const marker = body[i + 1]!;
    if (marker === 0xff) {
      i++; // fill byte
      continue;
    }
    if (marker === 0xd8 || marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) {
      i += 2; // no length
      continue;
    }
    if (marker === 0xd9 || marker === 0xda) return undefined; // end of image, start of scan: no SOF before it
    const length = body.readUInt16BE(i + 2);
    const isSof = marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
    if (isSof) {
      const s = i + 4;
      if (s + 6 > body.length) return undefined;
      const height = body.readUInt16BE(s + 1);
      const width = body.readUInt16BE(s + 3);
      const n = body[s + 5]!;
      if (s + 6 + n * 3 > body.length || n === 0 || height === 0 || width === 0) return undefined;
      const factors = Array.from({ length: n }, (_, k) => ({ h: body[s + 6 + k * 3 + 1]! >> 4, v: body[s + 6 + k * 3 + 1]! & 0x0f }));
      const hMax = Math.max(...factors.map((f) => f.h));
      const vMax = Math.max(...factors.map((f) => f.v));
      if (!(hMax > 0 && vMax > 0)) return undefined;
      let blocks = 0;
      for (const f of factors) {
        const wBlocks = Math.ceil((width * f.h) / (hMax * 8));
        const hBlocks = Math.ceil((height * f.v) / (vMax * 8));
        blocks += Math.ceil(wBlocks / f.h) * f.h * (Math.ceil(hBlocks / f.v) * f.v);
      }
      return blocks * 64 * 2;
    }
    i += 2 + length;
  }
  return undefined;
}

/** Bytes the decoder holds for the whole image (0 for streamed layouts). */
export function wholeImageBytes(h: DecodeHeader, body?: Buffer): number {
  const pixels = h.width * h.height;
  if (h.format === 'jpeg' && h.isProgressive) {
    // Without a readable SOF, assume no chroma subsampling: 2 bytes per sample per channel.
    return (body && jpegCoefficientBytes(body)) ?? pixels * h.channels * 2;
  }
  if (h.format === 'png' && h.isProgressive) return pixels * h.channels * sampleBytes(h);
  if (h.format === 'webp' && h.hasAlpha) return pixels;
  return 0;
}

/** Estimated peak memory of decoding `h` and building its derivative, in bytes. */
export function estimateDecodeBytes(h: DecodeHeader, body?: Buffer): number {
  const pixels = h.width * h.height;
  return Math.ceil(WORKING_SET_BYTES + pixels * 0.5 * sampleBytes(h) + wholeImageBytes(h, body));
}

export type DecodeAdmission = { ok: true; cost: number } | { ok: false; detail: string };

/**
 * Whether a photo within the general limits (format, 100 MP) may be decoded at all,
 * and at what cost: a progressive JPEG or interlaced PNG over PROGRESSIVE_MAX_PIXELS,
 * or any photo whose estimate exceeds the budget (it could never be admitted), is
 * refused; the caller rejects it as `too_large`, once.
 */
export function admitDecode(h: DecodeHeader, budgetBytes: number, body?: Buffer): DecodeAdmission {
  const pixels = h.width * h.height;
  if (decodesWhole(h) && pixels > PROGRESSIVE_MAX_PIXELS) {
    const kind = h.format === 'jpeg' ? 'progressive JPEG' : 'interlaced PNG';
    return { ok: false, detail: `${h.width}x${h.height} ${kind} is over ${PROGRESSIVE_MAX_PIXELS / 1e6} megapixels (decoded whole into memory)` };
  }
  const cost = estimateDecodeBytes(h, body);
  if (cost > budgetBytes) {
    return { ok: false, detail: `${h.width}x${h.height} ${h.format} needs ~${Math.round(cost / MiB)} MiB to decode, over the ${Math.round(budgetBytes / MiB)} MiB decode budget` };
  }
  return { ok: true, cost };
}
