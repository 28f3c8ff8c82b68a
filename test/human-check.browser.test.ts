// The human check in a real browser: Debian's headless Chromium against a real edge on @hono/node-server
// (and the Worker edge in workerd), with the test provider on another loopback port playing Turnstile
// (scripts/lib/human-check-provider.ts: its api.js renders an iframe of its own origin that hands the
// page a token). The widget page, under its CSP, loads the provider's script, gets a token, sends it
// with a status request and reloads into the queue page: a real place when the token passes, the
// shadow lane's page when it fails (no place in the store). Without JavaScript the page says it needs
// it. The test writes docs/human-check-page.png.
import { mkdir } from 'node:fs/promises'
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { type HumanCheckProvider, startHumanCheckProvider } from '../scripts/lib/human-check-provider.js'
import type { Edge } from '../src/entry/build.js'
import { launchChromium, recordCspViolations } from './support/browser.js'
import { ManualClock } from './support/clock.js'
import { testEdge } from './support/edge.js'
import { type OriginServer, startOrigin } from './support/origin-server.js'
import { T0, workerRuntime } from './support/runtimes.js'
import { serveOnFreePort } from './support/serve.js'

const PAGE_WAIT = { timeout: 30_000, interval: 50 }
const ROOM = { id: 'hc', paths: ['/hc'], totalActiveUsers: 1, newUsersPerMinute: 60, abandonAfterSeconds: 3600, humanCheck: 'turnstile' }

let browser: Browser
let origin: OriginServer
let provider: HumanCheckProvider
const closers: (() => Promise<void>)[] = []

const env = () => ({
  ANTEROOM_HUMAN_CHECK_URL: provider.siteverifyUrl,
  ANTEROOM_HUMAN_CHECK_SECRET: provider.secret,
  ANTEROOM_HUMAN_CHECK_SITE_KEY: provider.siteKey,
  ANTEROOM_HUMAN_CHECK_SCRIPT_URL: provider.scriptUrl,
})

beforeAll(async () => {
  origin = await startOrigin((_req, res) => {
    res.setHeader('content-type', 'text/html; charset=utf-8')
    res.end('<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Shop</title></head><body><h1>Shop</h1></body></html>')
  })
  provider = await startHumanCheckProvider()
  browser = await launchChromium()
  await mkdir('docs', { recursive: true })
})

afterAll(async () => {
  await browser?.close()
  for (const close of closers.reverse()) await close()
  await provider?.close()
  await origin?.close()
})

/** A real edge over HTTP on a free loopback port, with its own manual clock and embedded store. */
async function serveEdge(): Promise<{ edge: Edge; base: string }> {
  const edge = await testEdge({ rooms: [ROOM], originUrl: origin.url, clock: new ManualClock(T0), env: env() })
  const server = await serveOnFreePort(edge.app.fetch)
  closers.push(async () => {
    await server.close()
    await edge.close()
  })
  return { edge, base: server.url }
}

/** What a page did wrong: console errors, uncaught errors, CSP reports. */
function watch(page: Page) {
  const problems: string[] = []
  page.on('console', (msg) => {
    if (msg.type() === 'error' || /Content.Security.Policy/i.test(msg.text())) problems.push(`console ${msg.type()}: ${msg.text()}`)
  })
  page.on('pageerror', (err) => problems.push(`pageerror: ${err.message}`))
  return problems
}

/** A new visitor's browser: the widget page, the token, the status request with it, then the queue page. */
async function joins(base: string, screenshot?: string) {
  const context = await browser.newContext({ viewport: { width: 420, height: 640 } })
  const page = await context.newPage()
  const problems = watch(page)
  await recordCspViolations(page)
  let answered = ''
  // The answer's request is held until the page with its widget has been looked at (and photographed).
  let release: () => void = () => {}
  const held = new Promise<void>((resolve) => {
    release = resolve
  })
  await page.route('**/_anteroom/status?*', async (route) => {
    answered = route.request().headers()['anteroom-human-check'] ?? ''
    await held
    await route.continue()
  })
  const res = await page.goto(`${base}/hc/event/7`)
  const csp = res?.headers()['content-security-policy'] ?? ''
  expect(csp).toContain(`frame-src ${provider.url};`)
  expect(await res?.text()).toContain('<main id="anteroom" data-room="hc" data-state="human_check"')
  await expect.poll(() => answered, PAGE_WAIT).toMatch(/^XXXX\.DUMMY\./)
  await page.frameLocator('#hc-widget iframe').locator('#box').waitFor({ timeout: PAGE_WAIT.timeout })
  expect(await page.locator('#hc-state').textContent()).toBe('Checking…')
  if (screenshot !== undefined) await page.screenshot({ path: screenshot, scale: 'css' })
  release()
  await expect.poll(() => page.locator('#position').count(), PAGE_WAIT).toBe(1)
  expect(new URL(page.url()).pathname).toBe('/hc/event/7')
  const queue = (await context.cookies()).find((c) => c.name === 'anteroom_q_hc')
  expect(queue?.httpOnly).toBe(true)
  expect(answered).toMatch(/^XXXX\.DUMMY\./)
  expect(await page.evaluate(() => (window as unknown as { cspViolations: string[] }).cspViolations)).toEqual([])
  expect(problems).toEqual([])
  const position = Number(await page.locator('#position').textContent())
  await context.close()
  return { position, token: answered }
}

describe('the human check in headless Chromium', () => {
  it('runs the provider’s widget under the page’s CSP, sends its token, and the visitor gets a place; a failing token, the shadow lane', async () => {
    const { edge, base } = await serveEdge()
    // The first takes the slot (admitted: the origin's page); the next waits in line.
    provider.outcome = 'pass'
    const context = await browser.newContext()
    const page = await context.newPage()
    await page.goto(`${base}/hc/`)
    await expect.poll(() => page.locator('h1').textContent(), PAGE_WAIT).toBe('Shop')
    await context.close()
    const passed = await joins(base, 'docs/human-check-page.png')
    expect(passed.position).toBe(1)
    expect((await edge.deps.queue.stats('hc')).waiting).toBe(1)
    // siteverify heard of the token from the edge, with the browser's address, and said it was made on this host.
    expect(provider.calls.at(-1)).toMatchObject({ response: passed.token, remoteip: '127.0.0.1', secret: provider.secret })
    // A token that fails: the same queue page, behind the one waiting, and no place in the store.
    provider.outcome = 'fail'
    const shadow = await joins(base)
    expect(shadow.position).toBeGreaterThanOrEqual(1)
    expect((await edge.deps.queue.stats('hc')).waiting).toBe(1)
    provider.outcome = 'pass'
  })

  it('does the same on the Worker edge in workerd (Miniflare), over Redis', async () => {
    const worker = await workerRuntime(() => inject('redisUrl')).start({ rooms: [ROOM], originUrl: origin.url, env: env() })
    closers.push(() => worker.close())
    // A JSON client takes the slot with a token of its own, so that the browser waits in line.
    const first = await worker.app.request(`${worker.url}/_anteroom/status?room=hc`, {
      headers: {
        accept: 'application/json',
        'anteroom-human-check': provider.mint({ pass: true, hostname: '127.0.0.1', action: 'anteroom-join', cdata: 'hc' }),
      },
    })
    expect(((await first.json()) as { state: string }).state).toBe('admitted')
    const { position } = await joins(worker.url as string)
    expect(position).toBe(1)
  })

  it('without JavaScript, says that this room needs it, and gives no place', async () => {
    const { edge, base } = await serveEdge()
    const context = await browser.newContext({ javaScriptEnabled: false })
    const page = await context.newPage()
    const res = await page.goto(`${base}/hc/checkout`)
    expect(res?.status()).toBe(200)
    // innerText is the text as rendered: the noscript message shows.
    expect(await page.locator('main').innerText()).toContain('This waiting room needs JavaScript to check that you are a person')
    expect((await context.cookies()).map((c) => c.name)).toEqual([])
    expect((await edge.deps.queue.stats('hc')).waiting).toBe(0)
    await context.close()
  })
})
