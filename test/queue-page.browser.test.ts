// The queue page in a real browser: Debian's headless Chromium, driven by playwright-core, against the
// real edge on @hono/node-server in front of a real origin on loopback. The edge and its embedded store
// run on a manual clock, so the test decides who gets in; the only waiting is for the page's own polls.
// The page's polling is also run against the Worker edge in workerd.
// It also writes the screenshots in docs/ (a phone and a desktop), overwriting them on each run.
import { mkdir } from 'node:fs/promises'
import type { Browser, BrowserContextOptions, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import type { Edge } from '../src/entry/build.js'
import { QUEUE_ASSETS } from '../src/http/pages.js'
import { launchChromium, recordCspViolations } from './support/browser.js'
import { ManualClock } from './support/clock.js'
import { testEdge } from './support/edge.js'
import { type OriginServer, startOrigin } from './support/origin-server.js'
import { type RequestTarget, workerRuntime } from './support/runtimes.js'
import { serveOnFreePort } from './support/serve.js'
import { Visitor } from './support/visitor.js'

const T0 = 1_800_000_000_000
const PHONE: BrowserContextOptions = { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 2 }
const DESKTOP: BrowserContextOptions = { viewport: { width: 1280, height: 800 } }
/** Long enough for several of the page's 2-second polls on a slow, shared machine. */
const PAGE_WAIT = { timeout: 20_000, interval: 100 }

const SHOP_PAGE =
  '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Ticket shop</title></head><body><h1>Welcome to the ticket shop</h1></body></html>'

let browser: Browser
let origin: OriginServer
const closers: (() => Promise<void>)[] = []

beforeAll(async () => {
  origin = await startOrigin((req, res) => {
    if (req.url === '/favicon.ico') {
      res.statusCode = 204
      res.end()
      return
    }
    res.setHeader('content-type', 'text/html; charset=utf-8')
    res.end(SHOP_PAGE)
  })
  browser = await launchChromium()
})

afterAll(async () => {
  await browser?.close()
  for (const close of closers.reverse()) await close()
  await origin?.close()
})

interface Served {
  edge: Edge
  clock: ManualClock
  base: string
}

/** A real edge over HTTP on a free loopback port, with its own manual clock and embedded memory store. */
async function serveEdge(rooms: Record<string, unknown>[]): Promise<Served> {
  const clock = new ManualClock(T0)
  const edge = await testEdge({ rooms, originUrl: origin.url, clock })
  const server = await serveOnFreePort(edge.app.fetch)
  closers.push(async () => {
    await server.close()
    await edge.close()
  })
  return { edge, clock, base: server.url }
}

const room = (over: Record<string, unknown>) => ({
  newUsersPerMinute: 60,
  sessionDurationSeconds: 600,
  abandonAfterSeconds: 3600,
  mode: 'fifo',
  ...over,
})

/** Visitors that arrive before the browser, through the same app: the first `active` get in, the rest wait. */
async function crowd(edge: Edge, path: string, active: number, waiting: number): Promise<Visitor[]> {
  const visitors: Visitor[] = []
  for (let i = 0; i < active + waiting; i++) {
    const v = new Visitor()
    await v.request(edge.app, path)
    visitors.push(v)
  }
  return visitors
}

/** What a page did: main-frame navigations, console errors, uncaught errors, CSP violations, polls. */
function watch(page: Page) {
  const seen = { navigations: 0, documents: [] as { url: string; refresh: string | undefined }[], polls: 0, problems: [] as string[] }
  page.on('framenavigated', (frame) => {
    if (frame === page.mainFrame()) seen.navigations++
  })
  page.on('response', (res) => {
    if (res.request().resourceType() === 'document' && res.frame() === page.mainFrame()) {
      seen.documents.push({ url: res.url(), refresh: res.headers().refresh })
    }
  })
  page.on('request', (req) => {
    if (new URL(req.url()).pathname === '/_anteroom/status') seen.polls++
  })
  page.on('console', (msg) => {
    if (msg.type() === 'error' || /Content.Security.Policy/i.test(msg.text())) seen.problems.push(`console ${msg.type()}: ${msg.text()}`)
  })
  page.on('pageerror', (err) => seen.problems.push(`pageerror: ${err.message}`))
  return seen
}

/**
 * The page's widths. A mobile browser widens the layout to fit content that overflows (innerWidth
 * grows with it), so all three must equal the device width for the page to fit without scrolling.
 */
async function noSidewaysScroll(page: Page) {
  return page.evaluate(() => ({
    scrollWidth: document.scrollingElement?.scrollWidth ?? 0,
    innerWidth,
    clientWidth: document.documentElement.clientWidth,
  }))
}

async function text(page: Page, selector: string): Promise<string> {
  return ((await page.locator(selector).textContent()) ?? '').trim()
}

/** WCAG contrast ratio between an element's text colour and the background of its nearest opaque ancestor. */
async function contrast(page: Page, selector: string): Promise<number> {
  return page
    .locator(selector)
    .first()
    .evaluate((el) => {
      const rgb = (s: string) => (s.match(/[\d.]+/g) ?? []).map(Number)
      const lum = (c: number[]) => {
        const [r, g, b] = c.slice(0, 3).map((v) => {
          const x = v / 255
          return x <= 0.03928 ? x / 12.92 : ((x + 0.055) / 1.055) ** 2.4
        }) as [number, number, number]
        return 0.2126 * r + 0.7152 * g + 0.0722 * b
      }
      let bgEl: Element | null = el
      let bg = [255, 255, 255]
      while (bgEl) {
        const c = rgb(getComputedStyle(bgEl).backgroundColor)
        if (c.length === 3 || (c.length === 4 && c[3] !== 0)) {
          bg = c
          break
        }
        bgEl = bgEl.parentElement
      }
      const a = lum(rgb(getComputedStyle(el).color))
      const b = lum(bg)
      return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05)
    })
}

const POLL_ROOM = room({ id: 'sale', paths: ['/tickets'], totalActiveUsers: 1, refreshSeconds: 2 })

/**
 * One slot: A holds it, B waits first, the browser waits second. The page must poll in place, move up
 * when A's session runs out, and let itself in when B leaves. Runs against any edge reachable at `base`.
 */
async function pollsQuietly(o: {
  base: string
  app: RequestTarget
  advance(ms: number): Promise<void>
  endSession(visitor: string): Promise<boolean>
}) {
  const crowd = [new Visitor(), new Visitor()]
  for (const v of crowd) await v.request(o.app, '/tickets')
  // The visitor id is the third field of the queue token: q1.room.visitor.arrival.expires.mac.
  const bVisitor = crowd[1]?.cookies.get('anteroom_q_sale')?.split('.')[2]
  expect(bVisitor).toBeTruthy()

  const context = await browser.newContext(PHONE)
  const page = await context.newPage()
  const seen = watch(page)
  await recordCspViolations(page)
  const res = await page.goto(`${o.base}/tickets/show/7`)
  // The first response cannot know that the browser runs scripts, so it carries Refresh, one refresh
  // after the script's first poll (responses.ts)...
  expect(res?.headers().refresh).toBe('4')
  expect(await text(page, '#position')).toBe('2')
  expect(await text(page, '#ahead')).toBe('1')
  // One slot, A's for a 10-minute session, then B's: the browser's turn is about 20 minutes away.
  expect(await text(page, '#eta')).toBe('about 20 minutes')
  expect(await text(page, '#eta-range')).toMatch(/— an estimate$/)
  await expect
    .poll(async () => (await context.cookies()).some((c) => c.name === 'anteroom_js' && c.value === QUEUE_ASSETS.js.version), PAGE_WAIT)
    .toBe(true)
  // ...which reloads the page once; from then on the page is served without it and the script polls.
  await expect.poll(() => seen.navigations, PAGE_WAIT).toBe(2)
  expect(seen.documents.map((d) => d.refresh)).toEqual(['4', undefined])
  expect(await text(page, '#position')).toBe('2')
  const pollsBefore = seen.polls
  await expect.poll(() => seen.polls, PAGE_WAIT).toBeGreaterThan(pollsBefore + 1)
  expect(await text(page, '#position')).toBe('2')
  expect(seen.navigations).toBe(2)

  // A's session runs out: the next poll lets B in and the browser moves up, in place.
  await o.advance(601_000)
  await expect.poll(() => text(page, '#position'), PAGE_WAIT).toBe('1')
  // The estimate moves with it, in place, from the edge's next look at the room (once a second of its
  // clock). B was let in while away and has not come for it, so the slot is theirs until an hour
  // (abandonAfterSeconds) after their last poll: about 50 minutes from now.
  await o.advance(1000)
  await expect.poll(() => text(page, '#eta'), PAGE_WAIT).toBe('about 50 minutes')
  expect(await text(page, '#eta-range')).toMatch(/^Between .+ — an estimate$/)
  expect(await text(page, '#ahead')).toBe('0')
  expect(await text(page, '#waiting')).toBe('1')
  const progress = page.locator('#progress')
  expect(await progress.evaluate((p) => [(p as HTMLProgressElement).value, (p as HTMLProgressElement).max])).toEqual([1, 1])
  expect(seen.navigations).toBe(2)
  expect(await page.title()).toBe('You are in line')

  // B leaves: the next poll admits the browser, which reloads itself into the shop.
  const before = origin.requests.filter((r) => r.url === '/tickets/show/7').length
  expect(await o.endSession(bVisitor as string)).toBe(true)
  await expect.poll(() => seen.navigations, PAGE_WAIT).toBe(3)
  await expect.poll(() => page.locator('h1').textContent(), PAGE_WAIT).toBe('Welcome to the ticket shop')
  expect(new URL(page.url()).pathname).toBe('/tickets/show/7')
  expect((await context.cookies()).some((c) => c.name === 'anteroom_a_sale')).toBe(true)
  expect(origin.requests.filter((r) => r.url === '/tickets/show/7')).toHaveLength(before + 1)
  expect(seen.problems).toEqual([])
  await context.close()
}

describe('the queue page in headless Chromium', () => {
  // A busy sale: 10 people inside, 1,233 waiting, so the browser is number 1,234. A 30-second refresh
  // keeps the page still while it is inspected.
  let look: Served
  beforeAll(async () => {
    look = await serveEdge([room({ id: 'look', paths: ['/look'], totalActiveUsers: 10, newUsersPerMinute: 600, refreshSeconds: 30 })])
    await crowd(look.edge, '/look', 10, 1233)
  })

  it('renders on a phone: place, people ahead, ETA and progress on one screen, no sideways scrolling, no errors', async () => {
    const context = await browser.newContext(PHONE)
    const page = await context.newPage()
    const seen = watch(page)
    await recordCspViolations(page)
    const res = await page.goto(`${look.base}/look/seat/12`)
    expect(res?.status()).toBe(200)
    expect(res?.headers()['content-security-policy']).toContain(`script-src ${look.base}/_anteroom/queue.js;`)

    expect(await text(page, '#position')).toBe('1,234')
    expect(await text(page, '#ahead')).toBe('1,233')
    expect(await text(page, '#waiting')).toBe('1,234')
    // The 10 inside hold the room (10 at once) for their 10-minute sessions: the line moves 10 at a time
    // as sessions end, each slot held 10 min 15 s (a session from when its visitor collects it, half a
    // 30-s refresh after the grant): 1,234 places are about 123 rounds. (By the last minute's 10
    // admissions it said 2 h 3 min.)
    expect(await text(page, '#eta')).toBe('about 21 h 11 min')
    expect(await text(page, '#eta-range')).toMatch(/^Between \d+ h( \d+ min)? and \d+ h( \d+ min)? — an estimate$/)
    const progress = page.locator('progress#progress')
    expect(await progress.getAttribute('max')).toBe('1234')
    expect(await progress.getAttribute('value')).toBe('1')
    expect(await progress.getAttribute('aria-label')).toBeTruthy()
    await expect.poll(() => progress.isVisible()).toBe(true)

    // Landmarks and the live region that screen readers announce.
    expect(await page.getByRole('main').count()).toBe(1)
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('You are in line')
    const live = page.locator('[role="status"][aria-live="polite"]')
    expect(await live.count()).toBe(1)
    expect(await live.locator('#position').count()).toBe(1)
    expect(await page.locator('body').textContent()).toContain('This page refreshes itself every 30 seconds')

    // Fits the phone: no horizontal scrolling, the numbers above the fold, the progress bar full width.
    const fit = await noSidewaysScroll(page)
    expect(fit).toEqual({ scrollWidth: 390, innerWidth: 390, clientWidth: 390 })
    const eta = await page.locator('#eta').boundingBox()
    expect(eta && eta.y + eta.height).toBeLessThanOrEqual(844)
    const bar = await progress.boundingBox()
    expect(bar?.width).toBeGreaterThan(390 * 0.7)
    expect(bar?.height).toBeGreaterThan(4)
    const big = await page.locator('#position').evaluate((el) => Number.parseFloat(getComputedStyle(el).fontSize))
    expect(big).toBeGreaterThanOrEqual(32)
    // Each label stays on one line beside its value.
    const rows = await page.locator('dl dt').evaluateAll((dts) =>
      dts.map((dt) => {
        const dd = dt.nextElementSibling as Element
        const a = dt.getBoundingClientRect()
        const b = dd.getBoundingClientRect()
        return {
          label: dt.textContent,
          oneLine: a.height < 1.6 * Number.parseFloat(getComputedStyle(dt).fontSize) * 1.5,
          beside: a.top === b.top,
        }
      }),
    )
    expect(rows).toEqual(
      ['People ahead of you', 'People in line', 'Estimated wait'].map((label) => ({ label, oneLine: true, beside: true })),
    )

    // Readable: body text and the muted labels meet WCAG AA contrast.
    expect(await contrast(page, 'h1')).toBeGreaterThanOrEqual(4.5)
    expect(await contrast(page, 'dt')).toBeGreaterThanOrEqual(4.5)
    expect(await contrast(page, 'p.muted:last-of-type')).toBeGreaterThanOrEqual(4.5)

    // The poller ran under the CSP (it sets its cookie to its version), and nothing was blocked or thrown.
    expect((await context.cookies()).find((c) => c.name === 'anteroom_js')?.value).toBe(QUEUE_ASSETS.js.version)
    expect(await page.evaluate(() => (window as unknown as { cspViolations: string[] }).cspViolations)).toEqual([])
    expect(seen.problems).toEqual([])

    await mkdir('docs', { recursive: true })
    await page.screenshot({ path: 'docs/queue-page-phone.png', scale: 'css' })
    await context.close()
  })

  it('stays readable in dark mode', async () => {
    const context = await browser.newContext({ ...PHONE, colorScheme: 'dark' })
    const page = await context.newPage()
    await page.goto(`${look.base}/look`)
    const bg = await page.locator('body').evaluate((el) => getComputedStyle(el).backgroundColor)
    expect(bg).toBe('rgb(17, 19, 26)')
    expect(await contrast(page, 'h1')).toBeGreaterThanOrEqual(4.5)
    expect(await contrast(page, 'dt')).toBeGreaterThanOrEqual(4.5)
    expect(await contrast(page, 'p.muted:last-of-type')).toBeGreaterThanOrEqual(4.5)
    await context.close()
  })

  it('renders on a desktop as a centred card', async () => {
    const context = await browser.newContext(DESKTOP)
    const page = await context.newPage()
    const seen = watch(page)
    await page.goto(`${look.base}/look`)
    expect(await text(page, '#position')).toBe('1,236')
    const card = await page.locator('.card').boundingBox()
    expect(card).not.toBeNull()
    if (card) {
      expect(card.width).toBeLessThan(700)
      expect(Math.abs(card.x + card.width / 2 - 640)).toBeLessThan(2)
    }
    const fit = await noSidewaysScroll(page)
    expect(fit).toEqual({ scrollWidth: 1280, innerWidth: 1280, clientWidth: 1280 })
    expect(seen.problems).toEqual([])
    await page.screenshot({ path: 'docs/queue-page-desktop.png', scale: 'css' })
    await context.close()
  })

  it('polls quietly: the place moves without a page load, and the page lets itself in when its turn comes', async () => {
    const { edge, clock, base } = await serveEdge([POLL_ROOM])
    await pollsQuietly({
      base,
      app: edge.app,
      advance: async (ms) => clock.advance(ms),
      endSession: (visitor) => edge.deps.queue.endSession('sale', visitor),
    })
  })

  it('does the same on the Worker edge in workerd (Miniflare), over Redis', async () => {
    const worker = await workerRuntime(() => inject('redisUrl')).start({ rooms: [POLL_ROOM], originUrl: origin.url })
    closers.push(() => worker.close())
    await pollsQuietly({
      base: worker.url as string,
      app: worker.app,
      advance: (ms) => worker.clock.advance(ms),
      endSession: (visitor) => worker.queue.endSession('sale', visitor, worker.clock.now()),
    })
  })

  it('works without JavaScript: the Refresh header and a noscript meta refresh move the page along', async () => {
    const { edge, base } = await serveEdge([room({ id: 'plain', paths: ['/plain'], totalActiveUsers: 1, refreshSeconds: 2 })])
    const [holder] = (await crowd(edge, '/plain', 1, 0)) as [Visitor]
    const context = await browser.newContext({ ...PHONE, javaScriptEnabled: false })
    const page = await context.newPage()
    const seen = watch(page)
    const res = await page.goto(`${base}/plain/checkout`)
    // The meta at the next poll, the header a refresh later: the meta moves the page.
    expect(res?.headers().refresh).toBe('4')
    expect(await text(page, '#position')).toBe('1')
    expect(await text(page, '#ahead')).toBe('0')
    expect(await page.locator('noscript meta[http-equiv="refresh"][content="2"]').count()).toBe(1)
    expect(await page.locator('body').textContent()).toContain('This page refreshes itself every 2 seconds')
    // Each reload keeps the place (no script, so no anteroom_js cookie and the header stays).
    await expect.poll(() => seen.navigations, PAGE_WAIT).toBeGreaterThanOrEqual(2)
    expect(await text(page, '#position')).toBe('1')
    expect((await context.cookies()).some((c) => c.name === 'anteroom_js')).toBe(false)
    expect(seen.documents.every((d) => d.refresh === '4')).toBe(true)

    const claims = JSON.parse(
      Buffer.from((holder.cookies.get('anteroom_a_plain') as string).split('.')[1] as string, 'base64url').toString(),
    )
    expect(await edge.deps.queue.endSession('plain', claims.sub)).toBe(true)
    await expect.poll(() => page.locator('h1').textContent(), PAGE_WAIT).toBe('Welcome to the ticket shop')
    expect(new URL(page.url()).pathname).toBe('/plain/checkout')
    expect(seen.problems).toEqual([])
    await context.close()
  })
})
