/**
 * One photo URL in, one outcome out: fetched through the egress guard, decoded with
 * sharp to prove it is an image and read its size, and turned into the stored
 * derivative. Rejection reasons (docs/contract-gaps.md "photos"):
 * - `forbidden_url`: the outbound rules refuse the URL or every address it resolves to;
 * - `unreachable`: any non-2xx answer (a redirect included: never followed), a
 *   time-out, a connection or TLS failure, a name that does not resolve;
 * - `too_large`: more than 25 MiB of bytes (refused while streaming), more than
 *   100 megapixels, a progressive JPEG or interlaced PNG over 50 megapixels, or an
 *   estimated decode larger than the whole decode budget (photo-decode-cost.ts);
 * - `not_an_image`: bytes that do not decode as JPEG, PNG or WebP (other formats too);
 * - `too_small`: the shorter side (after EXIF orientation) is under 300 px.
 *
 * The derivative: EXIF-oriented, longest side at most 2048 px (never enlarged), WebP,
 * metadata stripped; addressed by the sha256 of its bytes.
 *
 * Memory (docs/catalog.md "Memory bounds"): every check above is made on the header (sharp's metadata(),
 * which decodes no pixels), and a photo that passes decodes only once its estimated
 * cost fits in the per-process decode budget (photo-decode-budget.ts), so the decodes
 * in flight stay within DECODE_BUDGET_BYTES whatever PHOTO_CONCURRENCY is.
 */
import { createHash } from 'node:crypto';
import sharp from 'sharp';
import { EgressError, PHOTO_URL_RULES, guardedRequest, type Resolver } from '../kit/egress';
import type { RejectionReason } from './property-records';
import { DecodeBudget, DecodeWaitAborted } from './photo-decode-budget';
import { DECODE_BUDGET_BYTES, admitDecode } from './photo-decode-cost';

/** 25 MiB: larger sources are refused while streaming. */
export const MAX_PHOTO_BYTES = 25 * 1024 * 1024;
/** 100 megapixels. */
export const MAX_PHOTO_PIXELS = 100_000_000;
/** Shorter side under this is too small. */
export const MIN_PHOTO_SIDE = 300;
/** Longest side of the stored derivative. */
export const DERIVATIVE_MAX_SIDE = 2048;
const DERIVATIVE_QUALITY = 82;
/** libwebp effort 0-6: 2 encodes two to three times faster than the default 4 for files ~2 % larger (docs/performance.md). */
const DERIVATIVE_EFFORT = 2;
const ACCEPTED_FORMATS = new Map([
  ['jpeg', 'image/jpeg'],
  ['png', 'image/png'],
  ['webp', 'image/webp'],
]);

// Each image is processed once: libvips' operation cache would only hold memory.
sharp.cache(false);
// One libvips thread per image (sharp's own default with glibc, made explicit for any
// allocator): photos run in parallel on libuv's pool, and per-image worker threads
// would only multiply buffers on a 2-core container.
sharp.concurrency(1);

/** Options of every decode: bounded by the published pixel ceiling, streamed, no safety feature lifted. */
const DECODE_OPTIONS: sharp.SharpOptions = {
  limitInputPixels: MAX_PHOTO_PIXELS,
  limitInputChannels: 4,
  sequentialRead: true,
  unlimited: false,
  failOn: 'error',
};

/** The decode budget of this process (memory is per process, so is the budget). */
export const processDecodeBudget = new DecodeBudget(DECODE_BUDGET_BYTES);

/** A photo that passed: the stored derivative and facts about the source. */
export interface ProcessedPhoto {
  sha256: string;
  contentType: 'image/webp';
  width: number;
  height: number;
  bytes: Buffer;
  source: { contentType: string; width: number; height: number; bytes: number };
}

export type PhotoOutcome =
  | { ok: true; photo: ProcessedPhoto }
  | { ok: false; reason: RejectionReason; detail: string }
  /** Shutdown interrupted the fetch: not an outcome, the photo stays pending. */
  | { ok: false; reason: 'aborted'; detail: string };

export interface DecodeOptions {
  /** The budget decodes are admitted against; default processDecodeBudget. */
  budget?: DecodeBudget;
  /** Aborts the fetch or a wait for the budget (shutdown): the outcome is then `aborted`. */
  signal?: AbortSignal;
  /**
   * Decode with the whole budget, i.e. alone: for a photo whose earlier attempt never
   * finished (its process died), so that if it kills the process again it takes no
   * other photo with it.
   */
  alone?: boolean;
}

export interface FetchPhotoOptions extends DecodeOptions {
  allowCidrs: readonly string[];
  /** Deadline of the whole fetch (PHOTO_FETCH_TIMEOUT_MS). */
  timeoutMs: number;
  resolver?: Resolver;
}

/** Fetches and processes one photo URL. Never throws for the URL's fault. */
export async function fetchAndProcessPhoto(url: string, opts: FetchPhotoOptions): Promise<PhotoOutcome> {
  let body: Buffer;
  try {
    const res = await guardedRequest(url, {
      rules: PHOTO_URL_RULES,
      allowCidrs: opts.allowCidrs,
      headers: { accept: 'image/jpeg, image/png, image/webp;q=0.9, */*;q=0.1' },
      maxBytes: MAX_PHOTO_BYTES,
      connectTimeoutMs: Math.min(5000, opts.timeoutMs),
      headersTimeoutMs: Math.min(10000, opts.timeoutMs),
      bodyTimeoutMs: Math.min(10000, opts.timeoutMs),
      totalTimeoutMs: opts.timeoutMs,
      signal: opts.signal,
      resolver: opts.resolver,
    });
    if (res.status < 200 || res.status > 299) return { ok: false, reason: 'unreachable', detail: `HTTP ${res.status}` };
    body = res.body;
  } catch (err) {
    if (err instanceof EgressError) {
      if (err.reason === 'aborted') return { ok: false, reason: 'aborted', detail: err.message };
      return { ok: false, reason: err.kind, detail: `${err.reason}: ${err.message}` };
    }
    throw err;
  }
  return processPhotoBytes(body, opts);
}

/** Checks fetched bytes on their header, then (within the decode budget) decodes them and builds the derivative. */
export async function processPhotoBytes(body: Buffer, opts: DecodeOptions = {}): Promise<PhotoOutcome> {
  let meta: sharp.Metadata;
  try {
    // Header only: no pixel is decoded, so no limit is needed here.
    meta = await sharp(body, { limitInputPixels: false }).metadata();
  } catch (err) {
    return { ok: false, reason: 'not_an_image', detail: (err as Error).message };
  }
  const sourceType = meta.format ? ACCEPTED_FORMATS.get(meta.format) : undefined;
  if (!sourceType) return { ok: false, reason: 'not_an_image', detail: `format ${meta.format ?? 'unknown'} is not JPEG, PNG or WebP` };
  const width = meta.autoOrient?.width ?? meta.width;
  const height = meta.autoOrient?.height ?? meta.height;
  if (!width || !height) return { ok: false, reason: 'not_an_image', detail: 'no dimensions' };
  if (width * height > MAX_PHOTO_PIXELS) return { ok: false, reason: 'too_large', detail: `${width}x${height} is over 100 megapixels` };
  if (Math.min(width, height) < MIN_PHOTO_SIDE) return { ok: false, reason: 'too_small', detail: `${width}x${height}: shorter side under ${MIN_PHOTO_SIDE} px` };
  const budget = opts.budget ?? processDecodeBudget;
  const admission = admitDecode(meta, budget.capacity, body);
  if (!admission.ok) return { ok: false, reason: 'too_large', detail: admission.detail };

  let release: () => void;
  try {
    release = await budget.acquire(opts.alone ? budget.capacity : admission.cost, opts.signal);
  } catch (err) {
    if (err instanceof DecodeWaitAborted) return { ok: false, reason: 'aborted', detail: err.message };
    throw err;
  }
  let out: { data: Buffer; info: sharp.OutputInfo };
  try {
    out = await sharp(body, DECODE_OPTIONS)
      .autoOrient()
      .resize({ width: DERIVATIVE_MAX_SIDE, height: DERIVATIVE_MAX_SIDE, fit: 'inside', withoutEnlargement: true })
      .webp({ quality: DERIVATIVE_QUALITY, effort: DERIVATIVE_EFFORT })
      .toBuffer({ resolveWithObject: true });
  } catch (err) {
    // Headers parsed but the pixels do not decode (truncated or corrupt data).
    return { ok: false, reason: 'not_an_image', detail: (err as Error).message };
  } finally {
    release();
  }
  return {
    ok: true,
    photo: {
      sha256: createHash('sha256').update(out.data).digest('hex'),
      contentType: 'image/webp',
      width: out.info.width,
      height: out.info.height,
      bytes: out.data,
      source: { contentType: sourceType, width, height, bytes: body.length },
    },
  };
}
