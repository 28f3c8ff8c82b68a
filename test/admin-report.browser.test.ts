// The admin UI's Report view in a real browser: Debian's headless Chromium, driven by playwright-core,
// against a real Node edge on @hono/node-server over a real redis-server, with a manual clock. A sale of
// an hour runs through the edge first (arrivals in a burst, a network over the cap, some who give up,
// the event sold out after 40 minutes), the edge's sampler recording each minute as it begins (the test
// calls it, as its timer would). The page must show what the JSON report says, draw its charts and mark
// the sold-out minute; the test writes docs/admin-report.png, overwriting it on each run.
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
// @ts-expect-error TS7016: the admin UI is plain JavaScript; the page writes a percentile with this function
import { percentileText } from '../admin/ui/report.js'
import type { Report } from '../src/core/report.js'
import type { Edge } from '../src/entry/build.js'
import type { StockSnapshot } from '../src/ports/claim-gate.js'
import { type ChromiumOnApp, chromiumOn, recordCspViolations } from './support/browser.js'
import { ManualClock } from './support/clock.js'
import { testEdge } from './support/edge.js'
import { type OriginServer, startOrigin } from './support/origin-server.js'
import { freshDb, type RequestTarget, withSocketAddress } from './support/runtimes.js'
import { Visitor } from './support/visitor.js'

/** 2027-01-15T08:00:00Z: a minute's start. */
const T0 = 1_800_000_000_000
const MIN = 60_000
const STEP = 10_000
const ADMIN = 'maya-admin-token-0123456789abcdef'
const PAGE_WAIT = { timeout: 20_000, interval: 100 }
const seats = (sold: number): StockSnapshot['units'] =>
  Array.from({ length: 400 }, (_, i) => ({ unit: `seat:A${i + 1}`, capacity: 1, sold: i < sold ? 1 : 0 }))

let browser: Browser
let origin: OriginServer
let edge: Edge
let app: RequestTarget
let chromium: ChromiumOnApp | undefined
let base: string
const clock = new ManualClock(T0)

interface Fan {
  v: Visitor
  /** Gives up after joining: never polls again, and is dropped after abandonAfterSeconds. */
  quits: boolean
  admitted: boolean
}
const line: Fan[] = []

async function poll(f: Fan): Promise<void> {
  const status = await f.v.status(app, 'tour')
  if (status.state === 'admitted') f.admitted = true
}

/** Ten seconds of the sale: the clock moves (a new minute is recorded first), `arrivals` come, the front of the line polls. */
async function step(arrivals: number, bots: number, everyone: boolean): Promise<void> {
  clock.advance(STEP)
  if (clock.now() % MIN === 0) await edge.analytics.sample()
  const n = line.length
  for (let i = 0; i < arrivals; i++) {
    const v = new Visitor('http://tickets.example', `203.0.${113 + ((n + i) % 40)}.${(n + i) % 250}`)
    const res = await v.request(app, '/_anteroom/status?room=tour', { json: true })
    if (res.status === 200)
      line.push({ v, quits: (n + i) % 9 === 4, admitted: ((await res.json()) as { state: string }).state === 'admitted' })
  }
  // A script from one network: the cap on new places lets eight a minute through, and refuses the rest.
  for (let i = 0; i < bots; i++) {
    const v = new Visitor('http://tickets.example', `198.51.100.${i + 1}`)
    const res = await v.request(app, '/_anteroom/status?room=tour', { json: true })
    if (res.status === 200) line.push({ v, quits: true, admitted: false })
  }
  // The front of the line polls every 10 s; everyone else now and then (well within abandonAfterSeconds).
  const waiting = line.filter((f) => !f.quits && !f.admitted)
  for (const f of everyone ? waiting : waiting.slice(0, 12)) await poll(f)
}

beforeAll(async () => {
  origin = await startOrigin()
  const url = `${inject('redisUrl')}/${await freshDb(inject('redisUrl'))}`
  edge = await testEdge({
    rooms: [
      {
        id: 'tour',
        hosts: ['tickets.example'],
        paths: ['/'],
        totalActiveUsers: 300,
        newUsersPerMinute: 12,
        sessionDurationSeconds: 900,
        refreshSeconds: 30,
        abandonAfterSeconds: 600,
        joinsPerNetworkPerMinute: 8,
        event: 'tour',
        title: 'Summer tour: on-sale',
      },
    ],
    originUrl: origin.url,
    redisUrl: url,
    clock,
    adminTokens: `maya:${ADMIN}`,
  })
  app = withSocketAddress(edge.app)
  await edge.gate.reconcile('tour', { units: seats(0), holds: [] }, 0, clock.now())
  await edge.analytics.sample()
  // The on-sale: a burst that fades, a script for the first few minutes, everyone polling each minute.
  for (let i = 0; i < 240; i++) {
    const arrivals = i < 150 ? Math.max(0, Math.round(1 + 9 * Math.exp(-i / 25) * (1 + 0.4 * Math.sin(i * 0.7)))) : 0
    await step(arrivals, i < 18 ? 3 : 0, i % 6 === 5)
    // After 40 minutes the last seats are sold: the line is told so, and people leave it.
    if (i === 239) await edge.gate.reconcile('tour', { units: seats(400), holds: [] }, 0, clock.now())
  }
  // Sold out: those in line are told so as they poll, and leave, a third of them each minute.
  for (let i = 0; i < 114; i++) {
    if (i % 6 === 0) for (const [k, f] of line.filter((f) => !f.quits && !f.admitted).entries()) f.quits ||= k % 3 === 0
    await step(0, 0, false)
  }
  await edge.deps.rooms.settled()
  chromium = await chromiumOn(edge.app.fetch)
  browser = chromium.browser
  base = chromium.base
})

afterAll(async () => {
  await chromium?.close()
  await edge?.close()
  await origin?.close()
})

const text = async (page: Page, selector: string) => ((await page.locator(selector).textContent()) ?? '').trim()
const hhmm = (ms: number) => new Date(ms).toISOString().slice(11, 16)
const fmt = (n: number) => n.toLocaleString('en-US')

describe('the Report view in headless Chromium', () => {
  it("shows the JSON report's numbers, draws the line, the admissions and the time in queue, marks the sold-out minute", async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 1110 }, locale: 'en-US', timezoneId: 'UTC' })
    const page = await context.newPage()
    const problems: string[] = []
    page.on('pageerror', (err) => problems.push(err.message))
    page.on('console', (msg) => {
      // Chromium logs every 4xx answer ("Failed to load resource"): the signed-out session probe, the favicon.
      if (/Content.Security.Policy/i.test(msg.text()) || (msg.type() === 'error' && !/Failed to load resource/.test(msg.text())))
        problems.push(msg.text())
    })
    await recordCspViolations(page)
    await page.goto(`${base}/_anteroom/admin`)
    await page.getByLabel('Admin token').fill(ADMIN)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.locator('#app').waitFor({ state: 'visible' })
    await expect.poll(() => text(page, '#stat-store'), PAGE_WAIT).toBe('Up')

    await page.getByRole('tab', { name: 'Report' }).click()
    expect(await page.getByRole('tab', { name: 'Report' }).getAttribute('aria-selected')).toBe('true')
    expect(await page.locator('#room > .stats').isVisible()).toBe(false)
    await page.getByLabel('Range', { exact: true }).selectOption('1h')
    await expect.poll(() => text(page, '#report-status'), PAGE_WAIT).toMatch(/minutes recorded/)

    // The report the page drew, fetched by its own JSON link (the session cookie, same origin), and over the API.
    const href = (await page.locator('#report-json').getAttribute('href')) as string
    expect(href).toMatch(/^\/_anteroom\/api\/rooms\/tour\/report\?from=\d+&to=\d+$/)
    const viaPage = (await page.evaluate(async (h) => (await fetch(h)).json(), href)) as Report
    const report = (await (await fetch(`${base}${href}`, { headers: { authorization: `Bearer ${ADMIN}` } })).json()) as Report
    expect(viaPage).toEqual(report)
    expect(report.to).toBe(Math.floor(clock.now() / MIN) * MIN + MIN)
    expect(report.from).toBe(report.to - 60 * MIN)
    // A sale worth reading: admissions, people who gave up, refusals, a line, a sold-out minute.
    expect(report.admitted).toBeGreaterThan(100)
    expect(report.abandoned).toBeGreaterThan(10)
    expect(report.refused.network).toBeGreaterThan(10)
    expect(report.soldOutAt).toBe(T0 + 41 * MIN)
    expect(report.timeInQueue.admissions).toBeGreaterThan(50)

    // The numbers shown are the JSON report's.
    expect(await text(page, '#report-admitted')).toBe(fmt(report.admitted))
    expect(await text(page, '#report-abandoned')).toBe(fmt(report.abandoned))
    expect(await text(page, '#report-refused')).toBe(fmt(report.refused.network + report.refused.pow))
    expect(await text(page, '#report-refused-note')).toBe(
      `network ${fmt(report.refused.network)} · proof of work ${fmt(report.refused.pow)}`,
    )
    expect(await text(page, '#report-peak')).toBe(fmt(report.peakWaiting?.waiting as number))
    expect(await text(page, '#report-peak-note')).toBe(`at ${hhmm(report.peakWaiting?.t as number)}`)
    expect(await text(page, '#report-soldout')).toBe(hhmm(report.soldOutAt as number))
    for (const p of ['p50', 'p90', 'p99'] as const) {
      expect(await text(page, `#report-${p}`)).toBe(percentileText(report.timeInQueue[p]))
      expect(await text(page, `#report-${p}`)).toMatch(/^(≤|>) \d/)
    }
    expect(await text(page, '#report-p50-note')).toBe(`${fmt(report.timeInQueue.admissions)} admissions timed`)
    expect(await text(page, '#report-status')).toBe(`${fmt(report.minutesCovered)} of ${fmt(report.minutesInRange)} minutes recorded.`)

    // The charts: a point a minute of the line, the admissions per minute adding up to the total, a bar a
    // bucket of time in queue adding up to the admissions timed; the sold-out minute marked on both time charts.
    const withWaiting = report.minutes.filter((m) => m.waiting !== null).length
    await expect.poll(() => page.locator('#report-waiting path.line').getAttribute('data-points'), PAGE_WAIT).toBe(String(withWaiting))
    expect(await page.locator('#report-admissions g.bars').getAttribute('data-total')).toBe(String(report.admitted))
    expect(await page.locator('#report-wait g.bars').getAttribute('data-total')).toBe(String(report.timeInQueue.admissions))
    expect(await page.locator('#report-wait g.bars').getAttribute('data-bars')).toBe(String(report.timeInQueue.buckets.length))
    expect(await page.locator('#report-wait g.bars rect').count()).toBe(report.timeInQueue.buckets.filter((b) => b.count > 0).length)
    expect(await page.locator('.sold-out-label').allTextContents()).toEqual([
      `Sold out ${hhmm(T0 + 41 * MIN)}`,
      `Sold out ${hhmm(T0 + 41 * MIN)}`,
    ])
    expect(
      await page
        .locator('.percentile-label')
        .allTextContents()
        .then((t) => t.join(' ').split(' ').sort()),
    ).toEqual(['p50', 'p90', 'p99'])

    // The CSV link: the same report as a download, through the page's session.
    const csvHref = (await page.locator('#report-csv').getAttribute('href')) as string
    expect(csvHref).toBe(`${href}&format=csv`)
    expect(await page.locator('#report-csv').getAttribute('download')).toMatch(/^anteroom-tour-\d{8}T\d{4}\.csv$/)
    const csv = (await page.evaluate(async (h) => (await fetch(h)).text(), csvHref)) as string
    expect(csv).toContain(`\r\nadmitted,${report.admitted}\r\n`)

    await page.evaluate(() => window.scrollTo(0, 0))
    await page.screenshot({ path: 'docs/admin-report.png', scale: 'css' })
    // Back to the live view: the numbers and the chart again, the report hidden.
    await page.getByRole('tab', { name: 'Live' }).click()
    expect(await page.locator('#report-view').isVisible()).toBe(false)
    expect(await page.locator('#room > .stats').isVisible()).toBe(true)
    expect(await page.evaluate(() => (window as unknown as { cspViolations: string[] }).cspViolations)).toEqual([])
    expect(problems).toEqual([])
    await context.close()
  })
})
