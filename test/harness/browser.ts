import * as fs from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

/** Debian's Chromium; CHROMIUM_PATH overrides. */
export function chromiumPath(): string {
  const candidates = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser'].filter(
    Boolean,
  ) as string[];
  const found = candidates.find((p) => fs.existsSync(p));
  if (!found)
    throw new Error(
      `Chromium not found (looked at ${candidates.join(', ')}); run test/setup/ensure-deps.sh as root or set CHROMIUM_PATH`,
    );
  return found;
}

/** Headless Chromium with the flags that keep it off the network on a closed machine. */
export function launchBrowser(): Promise<Browser> {
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
