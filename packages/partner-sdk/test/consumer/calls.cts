/**
 * A partner's TypeScript (CommonJS) program against the installed package: compiled by
 * test/install.test.ts like calls.mts, through the package's `require` types.
 */
import { type Block, PartnerClient, type ProblemError, isProblem } from '@partner-sync/partner-sdk';

export async function blockNights(client: PartnerClient): Promise<number> {
  const block: Block = { provider_id: 'villa-42', check_in: '2030-08-01', check_out: '2030-08-04' };
  try {
    return (await client.putBlock('res-1', block)).nights;
  } catch (e) {
    if (isProblem(e, 'conflict')) return -(e satisfies ProblemError).conflicts.length;
    throw e;
  }
}

// @ts-expect-error a reason outside the closed set
export const wrong: Block = { provider_id: 'villa-42', check_in: '2030-08-01', check_out: '2030-08-04', reason: 'holiday' };

export const client = new PartnerClient({ baseUrl: 'https://api.partner.example/v1', apiKey: process.env.PSYNC_API_KEY ?? '' });
