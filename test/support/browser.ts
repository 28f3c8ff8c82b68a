// Launches Debian's Chromium headless through playwright-core: never a downloaded browser, and with
// background networking off (the machine's network is closed).
import { existsSync } from 'node:fs'
import { type Browser, chromium } from 'playwright-core'

export const CHROMIUM = '/usr/bin/chromium'

export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM))
    throw new Error(`${CHROMIUM} is missing: apt-get update && apt-get install -y chromium (npm test does this as root)`)
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  })
}
