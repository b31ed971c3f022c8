/**
 * The published signature vectors (docs/partners/signature-vectors.json) and the three
 * parties that must agree with every case: the service's signer
 * (services/notifications/signature.ts), the SDK's verifier, and the verification
 * snippets of docs/partners/webhook-verification.md in every language installed here
 * (a missing toolchain is a skipped test that names it).
 */
import { readFileSync } from 'node:fs';
import { signatureHeaders } from '../../../services/notifications/signature';
import { verifyWebhook, WebhookVerificationError } from '../src';
import { codeBlocks, GUIDE, LANGUAGES, loadVectors, missingToolchain, outcome, runSnippet, type VectorCase } from './support/snippets';

const vectors = loadVectors();
const guide = readFileSync(GUIDE, 'utf8');
const byName = (cases: VectorCase[]) => cases.map((c) => [c.name, c] as const);

describe('the vectors', () => {
  test('cover every outcome and every situation the guide promises', () => {
    const outcomes = new Set(vectors.cases.map(outcome));
    expect([...outcomes].sort()).toEqual(['ok', ...vectors.scheme.check_order].sort());
    expect(Object.keys(vectors.errors).sort()).toEqual([...vectors.scheme.check_order].sort());
    const names = vectors.cases.map((c) => c.name);
    expect(new Set(names).size).toBe(names.length);
    for (const name of [
      'valid',
      'unicode_body',
      'rotation_receiver_has_previous_only',
      'rotation_receiver_has_new_only',
      'rotation_receiver_has_both',
      'wrong_secret',
      'tampered_body',
      'too_old',
      'too_new',
    ]) {
      expect(names).toContain(name);
    }
    // The unicode case really is beyond ASCII, in the body the HMAC covers.
    const unicode = vectors.cases.find((c) => c.name === 'unicode_body')!;
    expect(Buffer.byteLength(unicode.request.body, 'utf8')).toBeGreaterThan(unicode.request.body.length);
    // Both signatures are sent in the rotation cases.
    expect(vectors.cases.filter((c) => c.request.headers['X-Signature-Previous']).length).toBeGreaterThanOrEqual(3);
  });
});

describe('the service signer produces each request from its signer inputs', () => {
  test.each(byName(vectors.cases))('%s', (_name, c) => {
    const keys = c.signer.previous_secret === null ? { current: c.signer.secret } : { current: c.signer.secret, previous: c.signer.previous_secret };
    // A time inside the second: the signer takes whole Unix seconds.
    const sent = signatureHeaders(keys, c.signer.body, new Date(c.signer.timestamp * 1000 + 999));
    const untouched = (name: string) => !c.tampered.includes(name);
    for (const [name, value] of Object.entries(sent)) {
      if (untouched(name)) expect([name, c.request.headers[name]]).toEqual([name, value]);
      else expect([name, c.request.headers[name]]).not.toEqual([name, value]);
    }
    expect(Object.keys(c.request.headers).filter((h) => !(h in sent))).toEqual([]);
    if (untouched('body')) expect(c.request.body).toBe(c.signer.body);
    else expect(c.request.body).not.toBe(c.signer.body);
  });
});

describe('the SDK verifier reaches each expected outcome', () => {
  const run = (c: VectorCase, body: string | Uint8Array): string => {
    try {
      const event = verifyWebhook(body, c.request.headers, c.receiver.secrets, {
        now: new Date(c.receiver.now * 1000),
        toleranceSeconds: c.receiver.tolerance_seconds,
      });
      expect(event).toEqual(JSON.parse(c.request.body));
      return 'ok';
    } catch (e) {
      if (e instanceof WebhookVerificationError) return e.code;
      throw e;
    }
  };
  test.each(byName(vectors.cases))('%s', (_name, c) => {
    expect(run(c, c.request.body)).toBe(outcome(c));
    expect(run(c, Buffer.from(c.request.body, 'utf8'))).toBe(outcome(c));
  });
});

describe('the guide', () => {
  test('has exactly one snippet per language (what the snippet tests run)', () => {
    for (const lang of LANGUAGES) expect([lang.fence, codeBlocks(guide, lang.fence).length]).toEqual([lang.fence, 1]);
  });
});

describe.each(LANGUAGES.map((lang) => [lang.name, lang] as const))('the %s snippet of the guide', (_name, lang) => {
  const missing = missingToolchain(lang);
  const run = missing ? test.skip : test;
  run(
    `reaches each expected outcome${missing ? ` (skipped: ${missing})` : ''}`,
    () => {
      const [snippet] = codeBlocks(guide, lang.fence);
      const { results, stderr } = runSnippet(lang, snippet!, vectors.cases);
      expect(results).toEqual(Object.fromEntries(vectors.cases.map((c) => [c.name, outcome(c)])));
      // Compilers and interpreters run with warnings on: the snippets are clean.
      expect(stderr.trim()).toBe('');
    },
    240_000,
  );
});
