// Launches Debian's Chromium headless through playwright-core: never a downloaded browser, and with
// background networking off (the machine's network is closed).
import { existsSync } from 'node:fs'
import { mkdir } from 'node:fs/promises'
import { type Browser, chromium, type Page } from 'playwright-core'
import { type FetchHandler, serveOnFreePort } from './serve.js'

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

/** A browser pointed at an app: Chromium, and the app on a free loopback port at `base`. */
export interface ChromiumOnApp {
  browser: Browser
  base: string
  /** Closes the browser, then the server. */
  close(): Promise<void>
}

/**
 * The browser suites' set-up: serves `fetch` (an edge's app) on a free loopback port, launches Chromium,
 * and makes docs/ for the screenshots the suites write.
 */
export async function chromiumOn(fetch: FetchHandler): Promise<ChromiumOnApp> {
  const server = await serveOnFreePort(fetch)
  let browser: Browser
  try {
    browser = await launchChromium()
  } catch (e) {
    await server.close()
    throw e
  }
  await mkdir('docs', { recursive: true })
  return {
    browser,
    base: server.url,
    close: async () => {
      await browser.close()
      await server.close()
    },
  }
}

/** Records CSP violations from inside the page (an init script is not itself subject to the page's CSP). */
export async function recordCspViolations(page: Page): Promise<void> {
  await page.addInitScript(() => {
    const w = window as unknown as { cspViolations: string[] }
    w.cspViolations = []
    document.addEventListener('securitypolicyviolation', (e) => w.cspViolations.push(`${e.violatedDirective} ${e.blockedURI}`))
  })
}
