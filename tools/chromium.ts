/**
 * Headless Chromium for the viewer's browser tests and its README screenshot: Debian's chromium, driven by
 * playwright-core (no browser download). CHROMIUM_PATH names another binary.
 */
import { existsSync } from 'node:fs';
import { type Browser, chromium } from 'playwright-core';

export const chromiumPath = () => process.env.CHROMIUM_PATH || '/usr/bin/chromium';

export const chromiumFound = () => existsSync(chromiumPath());

/** Launches it with a fresh profile (playwright makes a new user data directory for every launch). */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: chromiumPath(),
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}
