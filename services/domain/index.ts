/**
 * Domain rules more than one part of the system applies, and nothing else: the night
 * ranges of stays and blocks (night-range.ts), the sandbox's test stay (test-stay.ts)
 * and the contract quota's hourly window (rate-window.ts). The gateway checks them before
 * a call, the services again where they own the data. This file is the module's whole
 * public surface: import from `domain`, never from a file inside it (eslint.config.mjs).
 */
export { checkRange, formatDay, nightCountProblem, nightsOf, parseDay, type NightSpan, type RangeProblem } from './night-range';
export { resolveTestStay, TEST_STAY_LEAD_DAYS, TEST_STAY_NIGHTS, type StayViolation, type TestStay } from './test-stay';
export { secondsLeftInWindow } from './rate-window';
