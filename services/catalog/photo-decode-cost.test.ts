/**
 * The decode-cost estimate and the bounds built on it (photo-decode-cost.ts), and how
 * processPhotoBytes applies them: verdicts on the header alone (a header that claims
 * a huge image over tiny data is `too_large`, never decoded: decoding it would fail
 * as `not_an_image`), the lower ceiling of progressive JPEG and interlaced PNG, and
 * every decode holding its estimate from the decode budget while it runs.
 */
import sharp from 'sharp';
import { DecodeBudget } from './photo-decode-budget';
import {
  DECODE_BUDGET_BYTES,
  PROGRESSIVE_MAX_PIXELS,
  WORKING_SET_BYTES,
  admitDecode,
  decodesWhole,
  estimateDecodeBytes,
  jpegCoefficientBytes,
  type DecodeHeader,
} from './photo-decode-cost';
import { processPhotoBytes } from './photo-processor';
import { flatImage, headerBomb } from '../../test/catalog/support/photo-bombs';

const header = (over: Partial<DecodeHeader>): DecodeHeader => ({
  format: 'jpeg',
  width: 4000,
  height: 3000,
  channels: 3,
  depth: 'uchar',
  isProgressive: false,
  hasAlpha: false,
  ...over,
});

/** A budget whose acquisitions are recorded. */
function spyBudget(capacity = DECODE_BUDGET_BYTES): { budget: DecodeBudget; weights: number[] } {
  const budget = new DecodeBudget(capacity);
  const weights: number[] = [];
  const acquire = budget.acquire.bind(budget);
  budget.acquire = (weight, signal) => {
    weights.push(weight);
    return acquire(weight, signal);
  };
  return { budget, weights };
}

describe('jpegCoefficientBytes: the buffer libjpeg keeps for a multi-scan JPEG, from the SOF segment', () => {
  test.each<[string, (s: sharp.Sharp) => sharp.Sharp, number]>([
    // 640 x 480: 80 x 60 luma blocks; 4:2:0 chroma 40 x 30 blocks each; 128 bytes per block.
    ['4:2:0', (s) => s.jpeg({ progressive: true }), (4800 + 1200 + 1200) * 128],
    ['4:4:4', (s) => s.jpeg({ progressive: true, chromaSubsampling: '4:4:4' }), 3 * 4800 * 128],
    ['greyscale', (s) => s.toColourspace('b-w').jpeg({ progressive: true }), 4800 * 128],
  ])('%s', async (_label, encode, bytes) => {
    const body = await encode(sharp({ create: { width: 640, height: 480, channels: 3, background: '#5080a0' } })).toBuffer();
    expect(jpegCoefficientBytes(body)).toBe(bytes);
  });

  test('not a JPEG, or no SOF: undefined (the estimate then assumes no subsampling)', async () => {
    expect(jpegCoefficientBytes(await flatImage('png', 400, 400))).toBeUndefined();
    expect(jpegCoefficientBytes(Buffer.from([0xff, 0xd8, 0xff, 0xd9]))).toBeUndefined();
    expect(estimateDecodeBytes(header({ isProgressive: true, width: 1000, height: 1000 }))).toBe(WORKING_SET_BYTES + 500_000 + 6_000_000);
  });
});

describe('admitDecode', () => {
  test('streamed layouts (baseline JPEG, PNG, WebP) are admitted up to the general 100 MP, at a small cost', () => {
    for (const h of [header({ width: 10000, height: 10000 }), header({ format: 'png', width: 10000, height: 10000 }), header({ format: 'webp', width: 10000, height: 10000 })]) {
      expect(decodesWhole(h)).toBe(false);
      const a = admitDecode(h, DECODE_BUDGET_BYTES);
      expect(a).toEqual({ ok: true, cost: WORKING_SET_BYTES + 50_000_000 });
    }
  });

  test('progressive JPEG and interlaced PNG: at most PROGRESSIVE_MAX_PIXELS, costed with the whole image', () => {
    const atCeiling = header({ isProgressive: true, width: 10000, height: PROGRESSIVE_MAX_PIXELS / 10000 });
    expect(decodesWhole(atCeiling)).toBe(true);
    expect(admitDecode({ ...atCeiling, channels: 1 }, DECODE_BUDGET_BYTES)).toMatchObject({ ok: true });
    expect(admitDecode({ ...atCeiling, height: atCeiling.height + 1, channels: 1 }, DECODE_BUDGET_BYTES)).toEqual({
      ok: false,
      detail: expect.stringContaining('progressive JPEG is over 50 megapixels'),
    });
    const png = header({ format: 'png', isProgressive: true, width: 7000, height: 7000 });
    expect(admitDecode(png, DECODE_BUDGET_BYTES)).toEqual({ ok: true, cost: WORKING_SET_BYTES + 24_500_000 + 147_000_000 });
    expect(admitDecode({ ...png, width: 8000, height: 8000 }, DECODE_BUDGET_BYTES)).toMatchObject({ ok: false });
  });

  test('a photo whose estimate is over the whole budget is refused (it could never be admitted), not queued', () => {
    const rgba16 = header({ format: 'png', isProgressive: true, width: 6000, height: 6000, channels: 4, depth: 'ushort', bitsPerSample: 16 });
    expect(estimateDecodeBytes(rgba16)).toBeGreaterThan(DECODE_BUDGET_BYTES);
    expect(admitDecode(rgba16, DECODE_BUDGET_BYTES)).toEqual({ ok: false, detail: expect.stringContaining('over the 256 MiB decode budget') });
    // The same image not interlaced streams: admitted.
    expect(admitDecode({ ...rgba16, isProgressive: false }, DECODE_BUDGET_BYTES)).toMatchObject({ ok: true });
  });

  test('WebP with alpha keeps its alpha plane: one more byte per pixel', () => {
    expect(estimateDecodeBytes(header({ format: 'webp', hasAlpha: true, channels: 4, width: 10000, height: 10000 }))).toBe(WORKING_SET_BYTES + 150_000_000);
  });
});

describe('processPhotoBytes within the decode budget', () => {
  test.each<[string, () => Promise<Buffer>]>([
    ['a baseline JPEG claiming 12000 x 12000 (over 100 MP)', () => headerBomb('baseline-jpeg', 12000, 12000)],
    ['a PNG claiming 20000 x 20000', () => headerBomb('png', 20000, 20000)],
    ['a progressive JPEG claiming 10000 x 10000 (under 100 MP, over the progressive ceiling)', () => headerBomb('progressive-jpeg', 10000, 10000)],
    ['an interlaced PNG claiming 8000 x 8000', () => headerBomb('interlaced-png', 8000, 8000)],
  ])('%s: too_large on its header, never decoded', async (_label, make) => {
    const { budget, weights } = spyBudget();
    const out = await processPhotoBytes(await make(), { budget });
    expect(out).toMatchObject({ ok: false, reason: 'too_large' });
    expect(weights).toEqual([]); // never asked for decode memory: no pixel was decoded
  });

  test('the same small data claiming 8000 x 7000 as a BASELINE JPEG is admitted to decoding, at its streamed cost', async () => {
    const { budget, weights } = spyBudget();
    const out = await processPhotoBytes(await headerBomb('baseline-jpeg', 8000, 7000), { budget });
    // What the decoder makes of the missing rows does not matter here (libjpeg pads them grey).
    expect(out).not.toMatchObject({ reason: 'too_large' });
    expect(weights).toEqual([WORKING_SET_BYTES + 28_000_000]);
    expect(budget.inUse).toBe(0); // given back after the decode
  });

  test('a normal photo holds its estimate while it decodes, gives it back after; "alone" takes the whole budget', async () => {
    const body = await flatImage('baseline-jpeg', 1600, 1200);
    const { budget, weights } = spyBudget();
    expect(await processPhotoBytes(body, { budget })).toMatchObject({ ok: true, photo: { width: 1600, height: 1200 } });
    expect(await processPhotoBytes(body, { budget, alone: true })).toMatchObject({ ok: true });
    expect(weights).toEqual([WORKING_SET_BYTES + 960_000, DECODE_BUDGET_BYTES]);
    expect(budget.inUse).toBe(0);
  });

  test('a decode that fails (truncated data) gives its estimate back', async () => {
    const whole = await sharp({ create: { width: 1600, height: 1200, channels: 3, background: '#000', noise: { type: 'gaussian', mean: 128, sigma: 30 } } })
      .jpeg()
      .toBuffer();
    const { budget, weights } = spyBudget();
    const out = await processPhotoBytes(whole.subarray(0, whole.length >> 1), { budget });
    expect(out).toMatchObject({ ok: false, reason: 'not_an_image' });
    expect(weights).toHaveLength(1);
    expect(budget.inUse).toBe(0);
  });

  test('waiting for room can be aborted (shutdown): the outcome is `aborted`, the photo stays pending', async () => {
    const { budget } = spyBudget();
    const hold = await budget.acquire(budget.capacity);
    const abort = new AbortController();
    const pending = processPhotoBytes(await flatImage('baseline-jpeg', 800, 600), { budget, signal: abort.signal });
    while (budget.waiting === 0) await new Promise((r) => setImmediate(r));
    abort.abort();
    await expect(pending).resolves.toMatchObject({ ok: false, reason: 'aborted' });
    hold();
    expect(budget.inUse).toBe(0);
  });
});
