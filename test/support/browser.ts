/**
 * Headless Chromium for the console's browser tests and benchmark: Debian's Chromium
 * (deploy/install-chromium.sh installs it when missing) driven by playwright-core.
 * Loopback only: the flags switch off Chromium's own background traffic (updates,
 * sync, field trials), which this machine's closed network would refuse anyway.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { ROOT } from './process';

/** The Chromium binary, installed first when it is missing. */
export function chromiumPath(): string {
  return execFileSync(join(ROOT, 'deploy', 'install-chromium.sh'), { encoding: 'utf8', timeout: 600_000 }).trim();
}

export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-default-apps',
  '--disable-extensions',
  '--metrics-recording-only',
  '--disable-features=Translate,OptimizationHints,MediaRouter',
];

/** A headless browser with a fresh temporary profile (playwright-core makes and removes it). */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: chromiumPath(), headless: true, args: CHROMIUM_ARGS });
}
