// What the admin UI's browser tests share: the real edge on @hono/node-server with its embedded store on a manual clock, two rooms, headless Chromium (playwright-core) on it, and the helpers that sign in, call the API, let simulated visitors join and move the clock.
// Simulated visitors join through the same app in this process; the tests move the clock and record the 10-s history
// samples themselves (the edge's own sampler runs on real time).
import type { Browser, BrowserContext, BrowserContextOptions, Page } from 'playwright-core'
import { afterAll, beforeAll, expect } from 'vitest'
import type { Edge } from '../../src/entry/build.js'
import { type ChromiumOnApp, chromiumOn, recordCspViolations } from './browser.js'
import { ManualClock } from './clock.js'
import { testEdge } from './edge.js'
import { type OriginServer, startOrigin } from './origin-server.js'
import { Visitor } from './visitor.js'

export const T0 = 1_800_000_000_000
export const DESKTOP: BrowserContextOptions = { viewport: { width: 1280, height: 800 }, locale: 'en-US', timezoneId: 'UTC' }
export const PHONE: BrowserContextOptions = {
  viewport: { width: 390, height: 844 },
  isMobile: true,
  hasTouch: true,
  deviceScaleFactor: 2,
  locale: 'en-US',
}
/** Long enough for several of the page's 2-second polls on a slow, shared machine. */
export const PAGE_WAIT = { timeout: 20_000, interval: 100 }
export const MAYA = 'maya-admin-token-0123456789abcdef'
export const SAM = 'sam-admin-token-0123456789abcdefgh'
export const HOST = 'tickets.example'

export let browser: Browser
let origin: OriginServer
export let edge: Edge
export let clock: ManualClock
export let base: string
let chromium: ChromiumOnApp | undefined
/** Everyone who joined the sale, in order. */
export const crowd: Visitor[] = []

/** Starts the origin, the edge and Chromium for the calling test file (beforeAll), and closes them (afterAll). */
export function useAdminBrowser(): void {
  beforeAll(async () => {
    origin = await startOrigin()
    clock = new ManualClock(T0)
    edge = await testEdge({
      rooms: [
        {
          id: 'sale',
          hosts: [HOST],
          paths: ['/tickets'],
          totalActiveUsers: 1000,
          newUsersPerMinute: 6,
          sessionDurationSeconds: 600,
          refreshSeconds: 20,
          abandonAfterSeconds: 3600,
          title: 'Summer tour: on-sale',
        },
        { id: 'presale', hosts: [HOST], paths: ['/presale'], totalActiveUsers: 200, newUsersPerMinute: 30, abandonAfterSeconds: 3600 },
      ],
      originUrl: origin.url,
      clock,
      adminTokens: `maya:${MAYA},sam:${SAM}`,
    })
    chromium = await chromiumOn(edge.app.fetch)
    browser = chromium.browser
    base = chromium.base
  })

  afterAll(async () => {
    await chromium?.close()
    await edge?.close()
    await origin?.close()
  })
}

// --- helpers -----------------------------------------------------------------------------------

// biome-ignore lint/suspicious/noExplicitAny: API responses are read field by field
export type Json = any

/** The admin API with a bearer token, over HTTP like any other client. */
export async function api(
  method: string,
  path: string,
  o: { token?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<{ status: number; body: Json }> {
  const headers: Record<string, string> = { authorization: `Bearer ${o.token ?? SAM}`, ...o.headers }
  if (o.body !== undefined) headers['content-type'] = 'application/json'
  const res = await fetch(`${base}/_anteroom/api${path}`, {
    method,
    headers,
    body: o.body === undefined ? undefined : JSON.stringify(o.body),
  })
  return { status: res.status, body: await res.json() }
}

export const stats = async (room: string) => (await api('GET', `/rooms/${room}/stats`)).body

/** n new visitors join a room's line through the edge app (each join is also a poll that admits). */
export async function join(n: number, path = '/tickets'): Promise<Visitor[]> {
  const joined: Visitor[] = []
  for (let i = 0; i < n; i++) {
    const v = new Visitor(`http://${HOST}`)
    const res = await v.request(edge.app, path)
    expect([200, 502]).toContain(res.status)
    joined.push(v)
  }
  if (path === '/tickets') crowd.push(...joined)
  return joined
}

/**
 * Ten seconds of the sale: the clock moves, somebody in line polls every second (admissions are
 * paced, so they happen at polls spread over the seconds, as a line of hundreds polling does),
 * `joiners` arrive, and the 10-s history sample is recorded as the edge's sampler would.
 */
export async function tick(joiners: number): Promise<void> {
  for (let s = 0; s < 9; s++) {
    clock.advance(1000)
    if (crowd.length > 0) await (crowd.at(-1) as Visitor).status(edge.app, 'sale')
  }
  clock.advance(1000)
  if (joiners > 0) await join(joiners)
  else await (crowd.at(-1) as Visitor).status(edge.app, 'sale')
  await edge.deps.queue.recordSample('sale', clock.now())
  await edge.deps.queue.recordSample('presale', clock.now())
}

/** Arrivals per 10 s after the on-sale opens: a burst that fades, with some wobble. */
export const arrivals = (i: number) => Math.max(1, Math.round(2 + 40 * Math.exp(-i / 16) * (1 + 0.3 * Math.sin(i * 1.3))))
/** ... and later on, a trickle. */
export const later = (i: number) => Math.max(0, Math.round(1.2 + Math.sin(i * 0.9)))

/** What a page did: page loads, PATCH requests, and what it should not: uncaught errors and CSP violations. */
export function watch(page: Page) {
  const seen = { loads: 0, problems: [] as string[], patches: 0 }
  page.on('request', (req) => {
    if (req.method() === 'PATCH') seen.patches++
    if (req.resourceType() === 'document' && req.frame() === page.mainFrame()) seen.loads++
  })
  page.on('console', (msg) => {
    // Chromium logs every 4xx answer to fetch() ("Failed to load resource"); the UI expects those.
    if (/Content.Security.Policy/i.test(msg.text()) || (msg.type() === 'error' && !/Failed to load resource/.test(msg.text())))
      seen.problems.push(`console ${msg.type()}: ${msg.text()}`)
  })
  page.on('pageerror', (err) => seen.problems.push(`pageerror: ${err.message}`))
  return seen
}

export const cspViolations = (page: Page) => page.evaluate(() => (window as unknown as { cspViolations: string[] }).cspViolations)

export async function text(page: Page, selector: string): Promise<string> {
  return ((await page.locator(selector).textContent()) ?? '').trim()
}

/** A fresh browser context, signed in through the form, with the given room selected. */
export async function signedIn(options: BrowserContextOptions = DESKTOP, room = 'sale') {
  const context = await browser.newContext(options)
  const page = await context.newPage()
  const seen = watch(page)
  await recordCspViolations(page)
  await page.goto(`${base}/_anteroom/admin`)
  await page.getByLabel('Admin token').fill(MAYA)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.locator('#app').waitFor({ state: 'visible' })
  await page.locator(`.room-button[data-room="${room}"]`).click()
  await expect.poll(() => text(page, '#room-name'), PAGE_WAIT).toBe(room)
  await expect.poll(() => page.locator('#f-newUsersPerMinute').inputValue(), PAGE_WAIT).not.toBe('')
  return { context, page, seen }
}

export async function done(context: BrowserContext, page: Page, seen: { problems: string[] }): Promise<void> {
  expect(await cspViolations(page)).toEqual([])
  expect(seen.problems).toEqual([])
  await context.close()
}

export const fieldValue = (page: Page, name: string) => page.locator(`#f-${name}`).inputValue()

/** A schedule's times, and the labels of their boxes in the form. */
export const SCHEDULE_KEYS = ['prequeueAt', 'opensAt', 'closesAt'] as const
export const SCHEDULE_LABELS = ['Pre-queue opens', 'Sale opens', 'Sale closes (optional)'] as const
