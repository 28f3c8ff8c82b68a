// A scheduled sale as a visitor sees it, in a real browser: Debian's headless Chromium, driven by
// playwright-core, against the real edge on @hono/node-server (embedded store, manual clock) in front
// of the echo origin on loopback. The page waits through the countdown, the pre-queue, the draw at
// the opening and its place in line, and reaches the origin, all by its own polls (every 2 s); the
// test only moves the edge's clock and has other visitors join over HTTP. It writes the screenshots
// docs/schedule-*.png, overwriting them on each run.
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Edge } from '../src/entry/build.js'
import { type ChromiumOnApp, chromiumOn, recordCspViolations } from './support/browser.js'
import { ManualClock } from './support/clock.js'
import { testEdge } from './support/edge.js'
import { type OriginServer, startOrigin } from './support/origin-server.js'
import type { RequestTarget } from './support/runtimes.js'
import { Visitor } from './support/visitor.js'

const T0 = 1_800_000_000_000 // 2027-01-15T08:00:00Z
const PREQUEUE_AT = T0 + 3600_000
const OPENS_AT = PREQUEUE_AT + 30 * 60_000
/** A time as a manager in Paris writes it: "2027-01-15T10:00:00+01:00". */
const paris = (ms: number) => `${new Date(ms + 3600_000).toISOString().slice(0, 19)}+01:00`
const ROOM = 'sale'
/** Long enough for several of the page's 2-second polls (and a reload) on a slow, shared machine. */
const PAGE_WAIT = { timeout: 20_000, polling: 100 }
/** Others who join the pre-queue before the browser's first poll in it. */
const OTHERS = 6

let browser: Browser
let origin: OriginServer
let edge: Edge
let clock: ManualClock
let chromium: ChromiumOnApp | undefined
let base: string
/** The edge over real HTTP, for the other visitors (the Visitor helper's cookie jar, fetch underneath). */
let http: RequestTarget
/** While set, the edge answers the browser only once it resolves. */
let hold: Promise<void> | null = null

beforeAll(async () => {
  origin = await startOrigin()
  clock = new ManualClock(T0)
  edge = await testEdge({
    rooms: [
      {
        id: ROOM,
        paths: ['/tickets'],
        // One every 10 s: the first drawn is let in at the opening, the browser some grants later.
        newUsersPerMinute: 6,
        totalActiveUsers: 1000,
        sessionDurationSeconds: 600,
        refreshSeconds: 2,
        abandonAfterSeconds: 3600,
        title: 'Winter tour: on-sale',
        message: 'The pre-queue was drawn at the opening; everyone who came later is in line behind it, in the order they came.',
        schedule: { prequeueAt: paris(PREQUEUE_AT), opensAt: paris(OPENS_AT), closesAt: paris(T0 + 14 * 3600_000) },
      },
    ],
    originUrl: origin.url,
    clock,
  })
  // The browser's requests (its page script sets the anteroom_js cookie) wait while `hold` is set:
  // a slow link, so that the others' joins come first.
  const fetchThroughGate = async (req: Request) => {
    if (hold !== null && /(^|; )anteroom_js=/.test(req.headers.get('cookie') ?? '')) await hold
    return edge.app.fetch(req)
  }
  chromium = await chromiumOn(fetchThroughGate)
  browser = chromium.browser
  base = chromium.base
  http = {
    request: (url, init) => {
      const u = new URL(url)
      return fetch(`${base}${u.pathname}${u.search}`, init)
    },
  }
})

afterAll(async () => {
  await chromium?.close()
  await edge?.close()
  await origin?.close()
})

/** What the page did: its polls, and what it should not do: console errors, uncaught errors, CSP violations. */
function watch(page: Page) {
  const seen = { polls: 0, problems: [] as string[] }
  page.on('request', (req) => {
    if (new URL(req.url()).pathname === '/_anteroom/status') seen.polls++
  })
  page.on('console', (msg) => {
    if (msg.type() === 'error' || /Content.Security.Policy/i.test(msg.text())) seen.problems.push(`console ${msg.type()}: ${msg.text()}`)
  })
  page.on('pageerror', (err) => seen.problems.push(`pageerror: ${err.message}`))
  return seen
}

async function text(page: Page, selector: string): Promise<string> {
  return ((await page.locator(selector).textContent()) ?? '').trim()
}

/** Waits until the page shows this headline: it gets there by its own poll and reload. */
async function headline(page: Page, wanted: string): Promise<void> {
  await page.waitForFunction((h) => document.getElementById('headline')?.textContent === h, wanted, PAGE_WAIT)
}

/** A visitor's place in the draw: the order of the first 10 hex digits of their draw value, then of their ticket. */
function drawOrder(values: Map<string, string>): string[] {
  return [...values.keys()].sort((a, b) => {
    const [va, vb] = [(values.get(a) as string).slice(0, 10), (values.get(b) as string).slice(0, 10)]
    return va < vb ? -1 : va > vb ? 1 : a < b ? -1 : 1
  })
}

describe('a scheduled sale in headless Chromium', () => {
  let context: BrowserContext

  afterAll(async () => {
    await context?.close()
  })

  it('waits through the countdown, the pre-queue, the draw and the line, and reaches the origin', async () => {
    context = await browser.newContext({ viewport: { width: 760, height: 660 }, locale: 'en-US' })
    const page = await context.newPage()
    const seen = watch(page)
    await recordCspViolations(page)
    const room = edge.deps.rooms.get(ROOM)
    if (room?.schedule == null) throw new Error('the room has no schedule')
    const schedule = room.schedule

    // Before the pre-queue: the times as written, and a countdown that ticks; no place, no ticket.
    const res = await page.goto(`${base}/tickets/seat/7`)
    expect(res?.status()).toBe(200)
    expect(await text(page, '#headline')).toBe('This sale has not opened yet')
    // The times as written, in their own zone, by Intl for the page's language (ICU puts a space or a narrow one before AM).
    expect(await text(page, 'h1 + p')).toMatch(
      /The pre-queue opens at 10:00[ \u202f]AM on January 15, 2027 \(UTC\+01:00\) and the sale at 10:30/,
    )
    expect(await text(page, '#countdown')).toBe('01:00:00')
    expect(await page.locator('#countdown').evaluate((el) => el.previousElementSibling?.textContent)).toBe('The pre-queue opens in')
    await page.waitForFunction(() => /^00:59:5\d$/.test(document.getElementById('countdown')?.textContent ?? ''), undefined, PAGE_WAIT)
    expect(await page.locator('#ticket').count()).toBe(0)
    expect((await context.cookies()).map((c) => c.name)).toEqual(['anteroom_js'])
    await page.screenshot({ path: 'docs/schedule-countdown.png', scale: 'css', fullPage: true })

    // The pre-queue opens. The browser's next poll waits until the others have joined over HTTP, so
    // that the count its page shows is known.
    let release = () => {}
    hold = new Promise<void>((resolve) => {
      release = resolve
    })
    clock.set(PREQUEUE_AT + 1000)
    const others: { v: Visitor; ticket: string }[] = []
    const join = async () => {
      const v = new Visitor()
      const s = (await v.status(http, ROOM)) as { state: string; ticket?: string }
      expect(s.state).toBe('prequeue')
      others.push({ v, ticket: s.ticket as string })
    }
    for (let i = 0; i < OTHERS; i++) await join()
    hold = null
    release()
    await headline(page, 'You are in the pre-queue')
    expect(await text(page, 'h1 + p')).toMatch(/When the sale opens at 10:30[ \u202f]AM on January 15, 2027 \(UTC\+01:00\)/)
    expect(await page.locator('#countdown').evaluate((el) => el.previousElementSibling?.textContent)).toBe('The sale opens in')
    await page.waitForFunction(() => /^00:29:5\d$/.test(document.getElementById('countdown')?.textContent ?? ''), undefined, PAGE_WAIT)
    expect(await text(page, '#waiting')).toBe(String(OTHERS + 1))
    const ticket = await text(page, '#ticket')
    expect(ticket).toMatch(/^\S{8,}$/)
    expect(others.map((o) => o.ticket)).not.toContain(ticket)
    expect(await page.locator('#position').count()).toBe(0)
    expect(await page.locator('#draw').count()).toBe(0)
    // The draw is committed to, not yet drawn.
    const committed = (await (await fetch(`${base}/_anteroom/draw?room=${ROOM}`)).json()) as Record<string, unknown>
    expect(committed).toMatchObject({ state: 'prequeue', entrants: OTHERS + 1 })
    await page.screenshot({ path: 'docs/schedule-prequeue.png', scale: 'css', fullPage: true })

    // More join until at least two are drawn ahead of the browser, so that it waits in line after
    // the opening (the draw values come from the edge's seed, secret until then).
    const value = (t: string) => edge.deps.draws.value({ ...room, schedule }, t)
    const values = new Map<string, string>([[ticket, await value(ticket)]])
    for (const o of others) values.set(o.ticket, await value(o.ticket))
    while (drawOrder(values).indexOf(ticket) < 2 && others.length < 2000) {
      await join()
      const t = others.at(-1)?.ticket as string
      values.set(t, await value(t))
    }
    const rank = drawOrder(values).indexOf(ticket) + 1
    expect(rank).toBeGreaterThanOrEqual(3)

    // The opening: the draw puts the pre-queue in order; one is let in at once (6 a minute), and
    // the browser waits in line with its drawn number.
    clock.set(OPENS_AT + 500)
    await headline(page, 'Winter tour: on-sale')
    expect(await text(page, '#draw strong')).toBe(`number ${rank}`)
    expect(await text(page, '#draw')).toMatch(
      new RegExp(`^You were drawn number ${rank} of the pre-queue; your draw value is [0-9a-f]{16}…\\.`),
    )
    expect(await text(page, '#ticket')).toBe(ticket)
    const position = Number(await text(page, '#position'))
    expect(position).toBe(rank - 1)
    expect(await text(page, '#ahead')).toBe(String(rank - 2))
    expect(await text(page, '#waiting')).toBe(String(values.size - 1))
    expect(await page.locator('#countdown').count()).toBe(0)
    await page.screenshot({ path: 'docs/schedule-drawn.png', scale: 'css', fullPage: true })

    // The draw block's link lists the visitor, at their rank, with the value the page shows.
    const href = (await page.locator('#draw a').getAttribute('href')) as string
    expect(href).toBe(`/_anteroom/draw?room=${ROOM}`)
    const drawPage = await context.newPage()
    const drawRes = await drawPage.goto(`${base}${href}`)
    expect(drawRes?.headers()['content-type']).toContain('application/json')
    const published = (await drawRes?.json()) as {
      state: string
      entrants: number
      draw: { rank: number; ticket: string; value: string }[]
    }
    await drawPage.close()
    expect(published.state).toBe('drawn')
    expect(published.entrants).toBe(values.size)
    expect(published.draw.map((e) => e.ticket)).toEqual(drawOrder(values))
    const mine = published.draw.find((e) => e.ticket === ticket)
    expect(mine?.rank).toBe(rank)
    expect(await text(page, '#draw code')).toBe(`${mine?.value.slice(0, 16)}…`)

    // Admission: a grant every 10 s of the edge's clock goes to the head of the line; those ahead of
    // the browser do not poll, so their grants wait for them. After rank - 1 of them, the browser's
    // own poll is let in, and its reload reaches the origin.
    let steps = 0
    while (!(await isEcho(page)) && steps < rank + 2) {
      clock.advance(10_000)
      steps++
      // Two polls after the move: at least one saw the new time.
      const polls = seen.polls
      await expect.poll(async () => seen.polls >= polls + 2 || (await isEcho(page)), PAGE_WAIT).toBe(true)
    }
    expect(await isEcho(page)).toBe(true)
    // Let in at the grant after the rank - 1 ahead of it (the first of them at the opening).
    expect(steps).toBe(rank - 1)
    const echoed = JSON.parse((await page.locator('body').textContent()) ?? '') as {
      method: string
      url: string
      headers: Record<string, string>
    }
    expect(echoed).toMatchObject({ method: 'GET', url: '/tickets/seat/7' })
    expect(origin.requests.filter((r) => r.url === '/tickets/seat/7')).toHaveLength(1)
    expect(page.url()).toBe(`${base}/tickets/seat/7`)
    expect((await context.cookies()).map((c) => c.name)).toContain('anteroom_a_sale')

    expect(await page.evaluate(() => (window as unknown as { cspViolations?: string[] }).cspViolations ?? [])).toEqual([])
    expect(seen.problems).toEqual([])
  })
})

/** Whether the page is the origin's echo (JSON of the request it got), not the queue page. */
async function isEcho(page: Page): Promise<boolean> {
  return page
    .evaluate(() => document.getElementById('anteroom') === null && (document.body?.textContent ?? '').includes('"url"'))
    .catch(() => false)
}
