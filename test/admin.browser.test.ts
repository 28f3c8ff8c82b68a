// The admin UI in a real browser: Debian's headless Chromium, driven by playwright-core, against the
// real edge on @hono/node-server with its embedded store on a manual clock. Simulated visitors join
// through the same app in this process; the test moves the clock and records the 10-s history
// samples itself (the edge's own sampler runs on real time). It also writes the admin screenshots in
// docs/, overwriting them on each run.
import type { Browser, BrowserContext, BrowserContextOptions, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Edge } from '../src/entry/build.js'
import { type ChromiumOnApp, chromiumOn, recordCspViolations } from './support/browser.js'
import { ManualClock } from './support/clock.js'
import { testEdge } from './support/edge.js'
import { type OriginServer, startOrigin } from './support/origin-server.js'
import { withSocketAddress } from './support/runtimes.js'
import { Visitor } from './support/visitor.js'

const T0 = 1_800_000_000_000
const DESKTOP: BrowserContextOptions = { viewport: { width: 1280, height: 800 }, locale: 'en-US', timezoneId: 'UTC' }
const PHONE: BrowserContextOptions = {
  viewport: { width: 390, height: 844 },
  isMobile: true,
  hasTouch: true,
  deviceScaleFactor: 2,
  locale: 'en-US',
}
/** Long enough for several of the page's 2-second polls on a slow, shared machine. */
const PAGE_WAIT = { timeout: 20_000, interval: 100 }
const MAYA = 'maya-admin-token-0123456789abcdef'
const SAM = 'sam-admin-token-0123456789abcdefgh'
const HOST = 'tickets.example'

let browser: Browser
let origin: OriginServer
let edge: Edge
let clock: ManualClock
let base: string
let chromium: ChromiumOnApp | undefined
/** Everyone who joined the sale, in order. */
const crowd: Visitor[] = []

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

// --- helpers -----------------------------------------------------------------------------------

// biome-ignore lint/suspicious/noExplicitAny: API responses are read field by field
type Json = any

/** The admin API with a bearer token, over HTTP like any other client. */
async function api(
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

const stats = async (room: string) => (await api('GET', `/rooms/${room}/stats`)).body

/** n new visitors join a room's line through the edge app (each join is also a poll that admits). */
async function join(n: number, path = '/tickets'): Promise<Visitor[]> {
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
async function tick(joiners: number): Promise<void> {
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
const arrivals = (i: number) => Math.max(1, Math.round(2 + 40 * Math.exp(-i / 16) * (1 + 0.3 * Math.sin(i * 1.3))))
/** ... and later on, a trickle. */
const later = (i: number) => Math.max(0, Math.round(1.2 + Math.sin(i * 0.9)))

/** What a page did: page loads, PATCH requests, and what it should not: uncaught errors and CSP violations. */
function watch(page: Page) {
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

const cspViolations = (page: Page) => page.evaluate(() => (window as unknown as { cspViolations: string[] }).cspViolations)

async function text(page: Page, selector: string): Promise<string> {
  return ((await page.locator(selector).textContent()) ?? '').trim()
}

/** A fresh browser context, signed in through the form, with the given room selected. */
async function signedIn(options: BrowserContextOptions = DESKTOP, room = 'sale') {
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

async function done(context: BrowserContext, page: Page, seen: { problems: string[] }): Promise<void> {
  expect(await cspViolations(page)).toEqual([])
  expect(seen.problems).toEqual([])
  await context.close()
}

const fieldValue = (page: Page, name: string) => page.locator(`#f-${name}`).inputValue()

/** A schedule's times, and the labels of their boxes in the form. */
const SCHEDULE_KEYS = ['prequeueAt', 'opensAt', 'closesAt'] as const
const SCHEDULE_LABELS = ['Pre-queue opens', 'Sale opens', 'Sale closes (optional)'] as const

// --- tests -------------------------------------------------------------------------------------

describe('the admin UI in headless Chromium', () => {
  it('signs in: a wrong token is refused with a message; the right one holds an HttpOnly, SameSite=Strict session', async () => {
    const context = await browser.newContext(DESKTOP)
    const page = await context.newPage()
    const seen = watch(page)
    await recordCspViolations(page)
    const res = await page.goto(`${base}/_anteroom/admin`)
    expect(res?.status()).toBe(200)
    expect(res?.headers()['content-security-policy']).toContain("script-src 'self'; style-src 'self'")
    await page.locator('#signin').waitFor({ state: 'visible' })
    expect(await page.locator('#app').isVisible()).toBe(false)
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Sign in to the waiting room admin')
    await page.screenshot({ path: 'docs/admin-signin.png', scale: 'css' })

    await page.getByLabel('Admin token').fill('not-the-token-0123456789abcdef')
    await page.getByRole('button', { name: 'Sign in' }).click()
    await expect.poll(() => text(page, '#signin-error'), PAGE_WAIT).toBe('That admin token is not valid. Check it and try again.')
    expect(await page.getByRole('alert').filter({ hasText: 'not valid' }).count()).toBe(1)
    expect(await page.getByLabel('Admin token').getAttribute('aria-invalid')).toBe('true')
    expect(await context.cookies()).toEqual([])
    expect(await page.locator('#app').isVisible()).toBe(false)

    await page.getByLabel('Admin token').fill(MAYA)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.locator('#app').waitFor({ state: 'visible' })
    expect(await text(page, '#who')).toBe('maya')
    expect(await page.locator('#signin').isVisible()).toBe(false)
    const cookies = await context.cookies()
    expect(cookies).toHaveLength(1)
    expect(cookies[0]).toMatchObject({ name: 'anteroom_admin', httpOnly: true, sameSite: 'Strict', path: '/_anteroom', secure: false })
    expect(await page.evaluate(() => document.cookie)).toBe('')
    // The token field is cleared, and the room list shows both rooms, in the store's order.
    expect(await page.getByLabel('Admin token').inputValue()).toBe('')
    expect(await page.locator('.room-button').evaluateAll((b) => b.map((x) => x.getAttribute('data-room')))).toEqual(['presale', 'sale'])
    await expect.poll(() => text(page, '#room-name'), PAGE_WAIT).toBe('presale')
    await page.locator('.room-button[data-room="sale"]').click()
    await expect.poll(() => text(page, '#room-name'), PAGE_WAIT).toBe('sale')
    expect(await page.locator('.room-button[aria-current="true"]').getAttribute('data-room')).toBe('sale')

    // A reload keeps the session (GET /api/session) and the room, with no sign-in form.
    await page.reload()
    await page.locator('#app').waitFor({ state: 'visible' })
    expect(await text(page, '#who')).toBe('maya')
    await expect.poll(() => text(page, '#room-name'), PAGE_WAIT).toBe('sale')
    await done(context, page, seen)
  })

  it('shows the numbers moving while visitors join, without a reload', async () => {
    const { context, page, seen } = await signedIn()
    await expect.poll(() => text(page, '#stat-store'), PAGE_WAIT).toBe('Up')
    expect(await text(page, '#stat-waiting')).toBe('0')
    const pointsOf = (series: string) => page.locator(`path[data-series="${series}"]`).getAttribute('data-points')

    // 6 a minute is one per 10 s: the first of 25 gets in, 24 wait.
    await join(25)
    await expect.poll(() => text(page, '#stat-waiting'), PAGE_WAIT).toBe('24')
    expect(await text(page, '#stat-active')).toBe('1')
    expect(await text(page, '#stat-admitted')).toBe('1')
    expect(await stats('sale')).toMatchObject({
      waiting: 24,
      active: 1,
      admittedLastMinute: 1,
      ratePerMinute: 1,
      store: 'up',
      mode: 'fifo',
    })
    // 24 places at the room's pace of 6 a minute (the line moves at the pace from the first admission).
    expect(await text(page, '#stat-eta')).toBe('4 min')
    await edge.deps.queue.recordSample('sale', clock.now())

    // Ten seconds later 10 more join and the next in line is admitted: the numbers and the chart move.
    await tick(10)
    await expect.poll(() => text(page, '#stat-waiting'), PAGE_WAIT).toBe('33')
    expect(await text(page, '#stat-active')).toBe('2')
    expect(await text(page, '#stat-admitted')).toBe('2')
    await expect.poll(() => pointsOf('waiting'), PAGE_WAIT).toBe('2')
    const line = await page.locator('path[data-series="waiting"]').getAttribute('d')
    await tick(5)
    await expect.poll(() => text(page, '#stat-waiting'), PAGE_WAIT).toBe('37')
    await expect.poll(() => pointsOf('waiting'), PAGE_WAIT).toBe('3')
    expect(await page.locator('path[data-series="waiting"]').getAttribute('d')).not.toBe(line)
    expect(await page.locator('#chart desc').textContent()).toContain('Waiting 37')
    expect(seen.loads).toBe(1)
    await done(context, page, seen)
  })

  it('changes newUsersPerMinute from 6 to 60, and the admission rate follows', async () => {
    const { context, page, seen } = await signedIn()
    expect(await fieldValue(page, 'newUsersPerMinute')).toBe('6')
    // The on-sale opens: a burst of arrivals over 15 minutes, let in at 6 a minute.
    for (let i = 0; i < 90; i++) await tick(arrivals(i))
    const before = await stats('sale')
    expect(before.admittedLastMinute).toBe(6)
    expect(before.waiting).toBeGreaterThan(500)
    await expect.poll(() => text(page, '#stat-admitted'), PAGE_WAIT).toBe('6')
    expect(await text(page, '#note-admitted')).toBe('limit 6 / min')

    await page.getByLabel('Admit per minute').fill('60')
    await page.getByRole('button', { name: 'Save changes' }).click()
    await expect.poll(() => text(page, '#save-status'), PAGE_WAIT).toBe('Saved: Admit per minute 60.')
    expect(await page.locator('#save-status').getAttribute('role')).toBe('status')
    // The edge serving visitors uses the new limit at once.
    expect(edge.deps.rooms.get('sale')?.newUsersPerMinute).toBe(60)
    expect((await api('GET', '/rooms/sale')).body.settings.newUsersPerMinute).toBe(60)
    await expect.poll(() => text(page, '#note-admitted'), PAGE_WAIT).toBe('limit 60 / min')

    // One minute at the new limit: 10 every 10 s, 60 in the minute, and the line shortens.
    let joined = 0
    for (let i = 0; i < 6; i++) {
      await tick(later(i))
      joined += later(i)
    }
    // (The pace lets one more in where a minute's window meets the slot of the change.)
    const after = await stats('sale')
    expect(after.admittedLastMinute).toBeGreaterThanOrEqual(60)
    expect(after.admittedLastMinute).toBeLessThanOrEqual(61)
    const admittedInMinute = before.waiting + joined - after.waiting
    expect(admittedInMinute).toBeGreaterThanOrEqual(57)
    expect(admittedInMinute).toBeLessThanOrEqual(61)
    await expect.poll(() => text(page, '#stat-admitted'), PAGE_WAIT).toBe(String(after.admittedLastMinute))
    await expect.poll(() => text(page, '#stat-waiting'), PAGE_WAIT).toBe(after.waiting.toLocaleString('en-US'))
    // It stays there: never more than the limit (and the second's share plus one) in any minute.
    for (let i = 6; i < 12; i++) {
      await tick(later(i))
      const inMinute = (await stats('sale')).admittedLastMinute
      expect(inMinute).toBeGreaterThanOrEqual(57)
      expect(inMinute).toBeLessThanOrEqual(62)
    }
    for (let i = 12; i < 60; i++) await tick(later(i))

    // The chart holds 25 minutes of samples, and marks the change.
    await expect
      .poll(async () => Number(await page.locator('path[data-series="waiting"]').getAttribute('data-points')), PAGE_WAIT)
      .toBeGreaterThanOrEqual(150)
    await expect.poll(() => page.locator('#chart .marker-label').allTextContents(), PAGE_WAIT).toEqual(['60/min'])
    await expect.poll(() => text(page, '#audit-rows tr:first-child td:last-child'), PAGE_WAIT).toBe('Admit per minute 6 → 60')
    await page.evaluate(() => window.scrollTo(0, 0))
    await page.screenshot({ path: 'docs/admin-dashboard.png', scale: 'css' })
    expect(seen.loads).toBe(1)
    await done(context, page, seen)
  })

  it('shows a conflict when someone else saved first (412), keeps the edits, and saves after reloading', async () => {
    const { context, page, seen } = await signedIn()
    expect(await fieldValue(page, 'newUsersPerMinute')).toBe('60')
    await page.getByLabel('Max active at once').fill('900')

    // Sam changes the room behind the page's back, through the API.
    const current = await api('GET', '/rooms/sale')
    const sam = await api('PATCH', '/rooms/sale', {
      body: { newUsersPerMinute: 120, title: 'Doors open at 10:00' },
      headers: { 'if-match': current.body.etag },
    })
    expect(sam.status).toBe(200)

    const patches = seen.patches
    await page.getByRole('button', { name: 'Save changes' }).click()
    const conflict = page.locator('#conflict')
    await conflict.waitFor({ state: 'visible' })
    expect(seen.patches).toBe(patches + 1)
    expect(await text(page, '#conflict-title')).toBe('Someone else changed this room first')
    expect(await conflict.getAttribute('role')).toBe('alert')
    const rows = await page
      .locator('#conflict-rows tr')
      .evaluateAll((trs) => trs.map((tr) => [...tr.children].map((c) => (c.textContent ?? '').trim())))
    expect(rows).toEqual([
      ['Admit per minute', '120', 'unchanged'],
      ['Max active at once', '1,000', '900'],
      ['Title', 'Doors open at 10:00', 'unchanged'],
    ])
    expect(await text(page, '#save-status')).toBe('Not saved: someone else changed this room first.')
    await expect
      .poll(() => text(page, '#conflict-text'), PAGE_WAIT)
      .toBe('Nothing was saved: sam changed it at 08:25:20. Their settings are live now; your edits are still in the form.')
    // The user's edit is still in the form, and nothing of it reached the store.
    expect(await fieldValue(page, 'totalActiveUsers')).toBe('900')
    expect(edge.deps.rooms.get('sale')).toMatchObject({ totalActiveUsers: 1000, newUsersPerMinute: 120, title: 'Doors open at 10:00' })
    await page.evaluate(() => window.scrollTo(0, 0))
    await page.screenshot({ path: 'docs/admin-conflict.png', scale: 'css' })

    // Reload theirs, keeping the edit; then the save goes through on their revision.
    await page.getByRole('button', { name: 'Load theirs, keep my edits' }).click()
    expect(await fieldValue(page, 'newUsersPerMinute')).toBe('120')
    expect(await fieldValue(page, 'title')).toBe('Doors open at 10:00')
    expect(await fieldValue(page, 'totalActiveUsers')).toBe('900')
    expect(await text(page, '#conflict-title')).toBe('Their settings are loaded, with your edits on top')
    await page.getByRole('button', { name: 'Save changes' }).click()
    await expect.poll(() => text(page, '#save-status'), PAGE_WAIT).toBe('Saved: Max active at once 900.')
    expect(await conflict.isVisible()).toBe(false)
    expect(edge.deps.rooms.get('sale')).toMatchObject({ totalActiveUsers: 900, newUsersPerMinute: 120, title: 'Doors open at 10:00' })
    await expect
      .poll(
        () => page.locator('#audit-rows tr').evaluateAll((trs) => trs.slice(0, 2).map((tr) => tr.children[1]?.textContent ?? '')),
        PAGE_WAIT,
      )
      .toEqual(['maya', 'sam'])

    // Again, dropping the edit this time: theirs are loaded and the lost edit stays listed.
    await page.getByLabel('Session', { exact: true }).fill('900')
    expect(
      (
        await api('PATCH', '/rooms/sale', {
          body: { refreshSeconds: 10 },
          headers: { 'if-match': (await api('GET', '/rooms/sale')).body.etag },
        })
      ).status,
    ).toBe(200)
    await page.getByRole('button', { name: 'Save changes' }).click()
    await conflict.waitFor({ state: 'visible' })
    await page.getByRole('button', { name: 'Load theirs, drop my edits' }).click()
    expect(await fieldValue(page, 'sessionDurationSeconds')).toBe('600')
    expect(await fieldValue(page, 'refreshSeconds')).toBe('10')
    expect(await text(page, '#conflict-rows')).toContain('900')
    expect(edge.deps.rooms.get('sale')?.sessionDurationSeconds).toBe(600)
    await done(context, page, seen)
  })

  it('rejects bad values next to their field, and changes nothing', async () => {
    const { context, page, seen } = await signedIn(DESKTOP, 'presale')
    const before = await api('GET', '/rooms/presale')
    const field = page.getByLabel('Max active at once')
    const save = page.getByRole('button', { name: 'Save changes' })
    const error = (name: string) => text(page, `#err-${name}`)

    for (const [value, message] of [
      ['0', 'Must be between 1 and 10,000,000, got 0.'],
      ['-5', 'Must be between 1 and 10,000,000, got -5.'],
      ['1e12', 'Must be between 1 and 10,000,000, got 1,000,000,000,000.'],
      ['2.5', 'Must be a whole number.'],
    ] as const) {
      await field.fill(value)
      await save.click()
      await expect.poll(() => error('totalActiveUsers'), PAGE_WAIT).toBe(message)
      expect(await field.getAttribute('aria-invalid')).toBe('true')
      expect(await page.evaluate(() => document.activeElement?.id)).toBe('f-totalActiveUsers')
      expect(await text(page, '#save-status')).toBe(`Not saved: Max active at once: ${message}`)
      // Typing clears the message.
      await field.fill('')
      expect(await error('totalActiveUsers')).toBe('')
    }

    // A blank number never leaves the page.
    const patches = seen.patches
    await field.fill('')
    await save.click()
    expect(await error('totalActiveUsers')).toBe('Enter a whole number.')
    expect(seen.patches).toBe(patches)

    // Rules across fields, and list entries, name the field too.
    await field.fill('200')
    await page.getByLabel('Refresh', { exact: true }).fill('30')
    await page.getByLabel('Drop after').fill('40')
    await save.click()
    await expect
      .poll(() => error('abandonAfterSeconds'), PAGE_WAIT)
      .toBe('Must be at least twice refreshSeconds (60), or polling visitors would be dropped.')
    await page.getByLabel('Drop after').fill('3600')
    await page.getByLabel('Refresh', { exact: true }).fill('20')
    await page.getByLabel('Path prefixes').fill('/presale\nearly-birds')
    await save.click()
    await expect.poll(() => error('paths'), PAGE_WAIT).toBe('Entry 2: Must start with /.')

    // Nothing reached the store: same revision, same values, on the edge too.
    const after = await api('GET', '/rooms/presale')
    expect(after.body).toEqual(before.body)
    expect(edge.deps.rooms.get('presale')).toMatchObject({ totalActiveUsers: 200, refreshSeconds: 20, paths: ['/presale'] })
    await done(context, page, seen)
  })

  it('builds the settings form from the schema the edge serves: one field per setting, with its label, range and help', async () => {
    const { context, page, seen } = await signedIn(DESKTOP, 'presale')
    const served = (await api('GET', '/settings-schema')).body
    const order = served.groups.map((g: Json) => g.name)
    const inForm = served.settings
      .filter((s: Json) => s.group !== null)
      .sort((a: Json, b: Json) => order.indexOf(a.group) - order.indexOf(b.group))
    // Exactly one control per setting in the form (a schedule: one per time), in the order of its
    // groups, each under its legend.
    expect(await page.locator('#settings [name]').evaluateAll((els) => els.map((e) => e.getAttribute('name')))).toEqual(
      inForm.flatMap((s: Json) => (s.type === 'schedule' ? SCHEDULE_KEYS.map((k) => `${s.name}.${k}`) : [s.name])),
    )
    expect(await page.locator('#settings legend').allTextContents()).toEqual(served.groups.map((g: Json) => g.legend))
    for (const s of inForm) {
      const control = page.getByLabel(s.label, { exact: true })
      expect(await control.getAttribute('id'), s.name).toBe(`f-${s.name}`)
      expect(await control.evaluate((el) => el.closest('fieldset')?.querySelector('legend')?.textContent), s.name).toBe(
        served.groups.find((g: Json) => g.name === s.group).legend,
      )
      const hint = (await page.locator(`#h-${s.name}`).count()) > 0 ? await text(page, `#h-${s.name}`) : ''
      if (s.type === 'integer') {
        expect(
          await control.evaluate((el) => [el.tagName, el.getAttribute('type'), el.getAttribute('min'), el.getAttribute('max')]),
        ).toEqual(['INPUT', 'number', String(s.min), String(s.max)])
        expect(hint, s.name).toMatch(/^\S+( \S+)? – \S+( \S+)?/)
      } else if (s.type === 'choice') {
        expect(
          await control.locator('option').evaluateAll((os) => os.map((o) => [o.getAttribute('value'), (o.textContent ?? '').trim()])),
        ).toEqual(s.values.map((v: string) => [v, s.choices[v].label]))
        expect(hint, s.name).toBe(s.choices[await control.inputValue()].help)
      } else if (s.type === 'schedule') {
        // A group named by the setting's label, with a labelled box per time, each described by its zone line and error.
        expect(await control.getAttribute('role')).toBe('group')
        for (const [k, label] of SCHEDULE_KEYS.map((k, i) => [k, SCHEDULE_LABELS[i]] as const)) {
          const box = control.getByLabel(label as string, { exact: true })
          expect(await box.getAttribute('name')).toBe(`${s.name}.${k}`)
          expect(await box.getAttribute('aria-describedby')).toBe(`t-${s.name}-${k} err-${s.name}-${k}`)
        }
      } else {
        expect(await control.evaluate((el) => el.tagName), s.name).toBe(s.type === 'list' || s.lines > 1 ? 'TEXTAREA' : 'INPUT')
      }
      if (s.help !== '' && s.type !== 'choice') expect(hint, s.name).toContain(s.help)
    }
    expect(await text(page, '#h-refreshSeconds')).toBe('2 s – 10 min')
    expect(await text(page, '#h-abandonAfterSeconds')).toBe('5 s – 1 day; ≥ 2 × refresh')
    await done(context, page, seen)
  })

  it('a setting the served schema adds appears in the form, and the edge judges it (nothing in the page names the fields)', async () => {
    const context = await browser.newContext(DESKTOP)
    const page = await context.newPage()
    const seen = watch(page)
    await recordCspViolations(page)
    // The schema as an edge with one more setting, and a renamed, narrower one, would serve it.
    await page.route('**/_anteroom/api/settings-schema', async (route) => {
      const response = await route.fetch()
      const schema = await response.json()
      const refresh = schema.settings.find((s: Json) => s.name === 'refreshSeconds')
      Object.assign(refresh, { label: 'Poll every', max: 300 })
      schema.settings.push({
        name: 'burstLimit',
        type: 'integer',
        label: 'Burst',
        help: 'at one poll',
        group: 'admission',
        min: 1,
        max: 500,
      })
      await route.fulfill({ response, json: schema })
    })
    await page.goto(`${base}/_anteroom/admin`)
    await page.getByLabel('Admin token').fill(MAYA)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.locator('.room-button[data-room="presale"]').click()
    await expect.poll(() => text(page, '#room-name'), PAGE_WAIT).toBe('presale')
    await expect.poll(() => page.locator('#f-refreshSeconds').inputValue(), PAGE_WAIT).toBe('20')
    expect(await page.getByLabel('Poll every').getAttribute('max')).toBe('300')
    expect(await page.getByLabel('Refresh', { exact: true }).count()).toBe(0)
    expect(await text(page, '#h-refreshSeconds')).toBe('2 s – 5 min')
    const burst = page.getByLabel('Burst')
    expect(
      await burst.evaluate((el) => [
        el.getAttribute('min'),
        el.getAttribute('max'),
        el.closest('fieldset')?.querySelector('legend')?.textContent,
      ]),
    ).toEqual(['1', '500', 'Admission'])
    expect(await text(page, '#h-burstLimit')).toBe('1 – 500; at one poll')
    // This edge's schema has no such setting: the save is refused by the edge, next to the field.
    await burst.fill('10')
    await page.getByRole('button', { name: 'Save changes' }).click()
    await expect.poll(() => text(page, '#err-burstLimit'), PAGE_WAIT).toBe('Is not a known setting.')
    expect(await text(page, '#save-status')).toBe('Not saved: Burst: Is not a known setting.')
    expect(edge.deps.rooms.get('presale')).not.toHaveProperty('burstLimit')
    await done(context, page, seen)
  })

  it('asks before closing a room or ending all sessions: cancel keeps things, confirm does it', async () => {
    const { context, page, seen } = await signedIn(DESKTOP, 'presale')
    // 30 a minute is one every 2 s: three arrive 2 s apart and all get in.
    for (let i = 0; i < 3; i++) {
      clock.advance(2000)
      await join(1, '/presale')
    }
    await expect.poll(() => text(page, '#stat-active'), PAGE_WAIT).toBe('3')
    const dialog = page.getByRole('dialog')

    await page.getByRole('button', { name: 'Close room' }).click()
    await dialog.waitFor({ state: 'visible' })
    expect(await text(page, '#confirm-title')).toBe('Close presale?')
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('confirm-cancel')
    await dialog.getByRole('button', { name: 'Cancel' }).click()
    await dialog.waitFor({ state: 'hidden' })
    // The dialog's close event comes a task later than the dialog hides.
    await expect.poll(() => text(page, '#announce'), PAGE_WAIT).toBe('Nothing changed: the room is still open.')
    expect(edge.deps.rooms.get('presale')?.mode).toBe('fifo')
    expect(await text(page, '#mode-badge')).toBe('Open line')
    // Escape cancels too.
    await page.getByRole('button', { name: 'Close room' }).click()
    await dialog.waitFor({ state: 'visible' })
    await page.keyboard.press('Escape')
    await dialog.waitFor({ state: 'hidden' })
    expect(edge.deps.rooms.get('presale')?.mode).toBe('fifo')

    await page.getByRole('button', { name: 'Close room' }).click()
    await dialog.getByRole('button', { name: 'Close room' }).click()
    await expect.poll(() => text(page, '#mode-badge'), PAGE_WAIT).toBe('Closed')
    expect(edge.deps.rooms.get('presale')?.mode).toBe('closed')
    expect(await text(page, '#announce')).toBe('presale is closed.')
    expect(await fieldValue(page, 'mode')).toBe('closed')
    expect((await new Visitor(`http://${HOST}`).status(edge.app, 'presale')).state).toBe('closed')
    expect(await page.getByRole('button', { name: 'Close room' }).isDisabled()).toBe(true)
    await expect.poll(() => text(page, '#audit-rows tr:first-child td:last-child'), PAGE_WAIT).toBe('Closed the room')

    await page.getByRole('button', { name: 'Resume' }).click()
    await expect.poll(() => text(page, '#mode-badge'), PAGE_WAIT).toBe('Open line')
    expect(edge.deps.rooms.get('presale')?.mode).toBe('fifo')

    await page.getByRole('button', { name: 'End all sessions' }).click()
    expect(await text(page, '#confirm-text')).toContain('All 3 active sessions end now.')
    await dialog.getByRole('button', { name: 'Cancel' }).click()
    expect((await stats('presale')).active).toBe(3)
    await page.getByRole('button', { name: 'End all sessions' }).click()
    await dialog.getByRole('button', { name: 'End all sessions' }).click()
    await expect.poll(() => text(page, '#announce'), PAGE_WAIT).toBe('Ended 3 sessions in presale.')
    expect((await stats('presale')).active).toBe(0)
    await expect.poll(() => text(page, '#stat-active'), PAGE_WAIT).toBe('0')
    await done(context, page, seen)
  })

  it('refuses a change from the signed-in browser without the CSRF header, and signs out', async () => {
    const { context, page, seen } = await signedIn(DESKTOP, 'presale')
    const call = (path: string, method: string, csrf?: string) =>
      page.evaluate(
        async ([path, method, csrf]) => {
          const headers: Record<string, string> = {}
          if (csrf) headers['x-csrf-token'] = csrf
          const res = await fetch(`/_anteroom/api${path}`, { method, headers })
          return { status: res.status, body: await res.json() }
        },
        [path, method, csrf] as const,
      )
    expect((await call('/rooms/presale', 'GET')).status).toBe(200)
    const refused = await call('/rooms/presale/pause', 'POST')
    expect(refused).toEqual({
      status: 403,
      body: { error: { code: 'ERR_CSRF', message: 'A change from the admin UI needs its X-CSRF-Token header' } },
    })
    expect((await call('/rooms/presale/pause', 'POST', 'forged-token')).status).toBe(403)
    expect(edge.deps.rooms.get('presale')?.mode).toBe('fifo')
    // The page's own token, from /api/session, does work.
    const session = await call('/session', 'GET')
    expect(session.body.who).toBe('maya')
    expect((await call('/rooms/presale/pause', 'POST', session.body.csrf)).status).toBe(200)
    expect(edge.deps.rooms.get('presale')?.mode).toBe('paused')
    await expect.poll(() => text(page, '#mode-badge'), PAGE_WAIT).toBe('Paused')
    await page.getByRole('button', { name: 'Resume' }).click()
    await expect.poll(() => text(page, '#mode-badge'), PAGE_WAIT).toBe('Open line')

    await page.getByRole('button', { name: 'Sign out' }).click()
    await page.locator('#signin').waitFor({ state: 'visible' })
    expect(await text(page, '#signin-error')).toBe('You are signed out.')
    expect(await context.cookies()).toEqual([])
    expect((await call('/session', 'GET')).status).toBe(401)
    await done(context, page, seen)
  })

  it('after repeated wrong tokens the sign-in says how long to wait and keeps the button disabled for it', async () => {
    const context = await browser.newContext(DESKTOP)
    const page = await context.newPage()
    const seen = watch(page)
    await recordCspViolations(page)
    await page.goto(`${base}/_anteroom/admin`)
    await page.locator('#signin').waitFor({ state: 'visible' })
    const button = page.getByRole('button', { name: 'Sign in' })
    const token = page.getByLabel('Admin token')
    // The name is optional; with one, the token must be that account's.
    await page.getByLabel('Account name (optional)').fill('sam')
    await token.fill(MAYA)
    await button.click()
    await expect
      .poll(() => text(page, '#signin-error'), PAGE_WAIT)
      .toBe('That name and admin token do not match. Check them and try again.')
    await page.getByLabel('Account name (optional)').fill('')
    for (let i = 2; i <= 4; i++) {
      await token.fill(`not-the-token-${i}-0123456789abcdef`)
      await button.click()
      await expect.poll(() => button.isEnabled(), PAGE_WAIT).toBe(true)
      expect(await text(page, '#signin-error')).toBe('That admin token is not valid. Check it and try again.')
    }
    // The fifth failure from this address locks it for a second (on the edge's clock).
    await token.fill('not-the-token-5-0123456789abcdef')
    await button.click()
    await expect
      .poll(() => text(page, '#signin-error'), PAGE_WAIT)
      .toBe('That admin token is not valid. Too many failed sign-ins: try again in 1 second.')
    expect(await button.isDisabled()).toBe(true)
    expect(await page.getByRole('alert').filter({ hasText: 'try again in 1 second' }).count()).toBe(1)
    expect(await context.cookies()).toEqual([])
    // When the wait is over the button comes back, and (the edge's clock past the lockout) the right token signs in.
    await expect.poll(() => button.isEnabled(), PAGE_WAIT).toBe(true)
    expect(await text(page, '#signin-error')).toBe('You can try signing in again.')
    clock.advance(1000)
    await token.fill(MAYA)
    await button.click()
    await page.locator('#app').waitFor({ state: 'visible' })
    expect(await text(page, '#who')).toBe('maya')
    await done(context, page, seen)
  })

  it('fits a phone and follows dark mode', async () => {
    // Two changes at the same moment, for the chart's markers.
    expect((await api('POST', '/rooms/sale/pause')).status).toBe(200)
    expect((await api('POST', '/rooms/sale/resume')).status).toBe(200)
    const { context, page, seen } = await signedIn({ ...PHONE, colorScheme: 'dark' })
    await expect.poll(() => text(page, '#stat-store'), PAGE_WAIT).toBe('Up')
    expect(await page.locator('body').evaluate((el) => getComputedStyle(el).backgroundColor)).toBe('rgb(17, 19, 26)')
    const fit = await page.evaluate(() => ({ scrollWidth: document.scrollingElement?.scrollWidth ?? 0, innerWidth }))
    expect(fit).toEqual({ scrollWidth: 390, innerWidth: 390 })
    const chart = await page.locator('#chart').boundingBox()
    expect(chart?.width).toBeGreaterThan(300)
    // Several changes at the same moment share one marker label instead of overprinting.
    const labels = () =>
      page.locator('#chart .marker-label').evaluateAll((els) =>
        els.map((el) => {
          const r = el.getBoundingClientRect()
          return { text: el.textContent ?? '', left: r.left, right: r.right }
        }),
      )
    await expect.poll(async () => (await labels()).some((l) => /^resumed \+\d+$/.test(l.text)), PAGE_WAIT).toBe(true)
    const shown = (await labels()).sort((a, b) => a.left - b.left)
    for (let i = 1; i < shown.length; i++) expect(shown[i]?.left).toBeGreaterThanOrEqual(shown[i - 1]?.right ?? 0)
    await done(context, page, seen)
  })

  it('shows the bot defence: proof of work off, the network cap, and the refused joins counting live', async () => {
    const { context, page, seen } = await signedIn()
    await expect.poll(() => text(page, '#def-cap'), PAGE_WAIT).toBe('off')
    expect(await text(page, '#def-pow')).toBe('off')
    expect(await text(page, '#def-refused-network')).toBe('0 (0 last min)')
    const current = await api('GET', '/rooms/sale')
    const patched = await api('PATCH', '/rooms/sale', { body: { joinsPerNetworkPerMinute: 2 }, headers: { 'if-match': current.body.etag } })
    expect(patched.status).toBe(200)
    await expect.poll(() => text(page, '#def-cap'), PAGE_WAIT).toBe('2 / min (IPv4 /24, IPv6 /56)')
    // Visitors on sockets from one /24: two get places, three are refused.
    const fromNetwork = withSocketAddress(edge.app)
    const statuses = []
    for (let i = 1; i <= 5; i++)
      statuses.push((await new Visitor(`http://${HOST}`, `198.51.100.${i}`).request(fromNetwork, '/tickets')).status)
    expect(statuses.filter((s) => s === 429)).toHaveLength(3)
    await expect.poll(() => text(page, '#def-refused-network'), PAGE_WAIT).toBe('3 (3 last min)')
    expect(await text(page, '#def-refused-pow')).toBe('0 (0 last min)')
    expect(seen.loads).toBe(1)
    await done(context, page, seen)
  })
  it('sets a scheduled sale live: each time shown in its zone, UTC and the browser’s; the edge’s errors under the right box', async () => {
    const { context, page, seen } = await signedIn({ ...DESKTOP, timezoneId: 'America/New_York' }, 'presale')
    const box = (k: (typeof SCHEDULE_KEYS)[number]) => page.locator(`#f-schedule-${k}`)
    const zone = (k: string) => text(page, `#t-schedule-${k}`)
    const error = (k: string) => text(page, `#err-schedule-${k}`)
    const save = page.getByRole('button', { name: 'Save changes' })
    const group = page.getByRole('group', { name: 'Schedule' })
    for (const k of SCHEDULE_KEYS) expect(await box(k).inputValue()).toBe('')
    expect(await text(page, '#p-schedule')).toBe('Live: no schedule.')
    expect(await zone('prequeueAt')).toBe('Empty: no schedule.')

    // The sale opens before its pre-queue: the edge refuses it, under "Sale opens".
    await group.getByLabel('Pre-queue opens').fill('2027-03-01T10:00:00+01:00')
    await group.getByLabel('Sale opens').fill('2027-03-01T09:30:00+01:00')
    const patches = seen.patches
    await save.click()
    await expect.poll(() => error('opensAt'), PAGE_WAIT).toBe('Must be after prequeueAt.')
    expect(seen.patches).toBe(patches + 1)
    expect(await box('opensAt').getAttribute('aria-invalid')).toBe('true')
    expect(await box('prequeueAt').getAttribute('aria-invalid')).toBeNull()
    expect(await error('prequeueAt')).toBe('')
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('f-schedule-opensAt')
    expect(await text(page, '#save-status')).toBe('Not saved: Schedule, sale opens: Must be after prequeueAt.')
    // A time without its zone: under "Pre-queue opens", with the example's date left as it is.
    await group.getByLabel('Pre-queue opens').fill('2027-03-01T10:00:00')
    expect(await error('opensAt')).toBe('')
    expect(await zone('prequeueAt')).toBe('Not a time with a zone: write it like 2026-12-01T09:30:00+01:00.')
    await save.click()
    await expect
      .poll(() => error('prequeueAt'), PAGE_WAIT)
      .toBe('Must be an ISO 8601 time with a time zone, like 2026-12-01T10:00:00+01:00.')
    expect((await api('GET', '/rooms/presale')).body.settings.schedule).toBeNull()

    // Good times, each shown as written, in UTC and in the browser's zone (New York, UTC-5 in March).
    const schedule = {
      prequeueAt: '2027-03-01T10:00:00+01:00',
      opensAt: '2027-03-01T10:30:00+01:00',
      closesAt: '2027-03-02T01:00:00+01:00',
    }
    await group.getByLabel('Pre-queue opens').fill(schedule.prequeueAt)
    await group.getByLabel('Sale opens').fill(schedule.opensAt)
    await group.getByLabel('Sale closes (optional)').fill(schedule.closesAt)
    expect(await zone('prequeueAt')).toBe('10:00 on 2027-03-01, UTC+01:00 — 09:00 UTC; your time (America/New_York) 04:00')
    expect(await zone('opensAt')).toBe('10:30 on 2027-03-01, UTC+01:00 — 09:30 UTC; your time (America/New_York) 04:30')
    expect(await zone('closesAt')).toBe('01:00 on 2027-03-02, UTC+01:00 — 00:00 UTC; your time (America/New_York) 19:00 on 2027-03-01')
    await save.click()
    await expect
      .poll(() => text(page, '#save-status'), PAGE_WAIT)
      .toBe('Saved: Schedule pre-queue 2027-03-01T10:00:00+01:00, opens 2027-03-01T10:30:00+01:00, closes 2027-03-02T01:00:00+01:00.')
    expect((await api('GET', '/rooms/presale')).body.settings.schedule).toEqual(schedule)
    expect(edge.deps.rooms.get('presale')?.schedule).toEqual(schedule)
    for (const k of SCHEDULE_KEYS) expect(await box(k).getAttribute('aria-invalid')).toBeNull()
    // The phase, on the edge's clock (weeks before the pre-queue); the form matches what is live.
    await expect.poll(() => page.locator('#p-schedule').getAttribute('data-phase'), PAGE_WAIT).toBe('scheduled')
    expect(await text(page, '#p-schedule')).toMatch(/^Live now: scheduled: nobody gets a place yet; the pre-queue opens in \d+ days\.$/)
    await save.click()
    expect(await text(page, '#save-status')).toBe('Nothing to save: the form matches the live settings.')
    await expect
      .poll(() => text(page, '#audit-rows tr:first-child td:last-child'), PAGE_WAIT)
      .toBe('Schedule none → pre-queue 2027-03-01T10:00:00+01:00, opens 2027-03-01T10:30:00+01:00, closes 2027-03-02T01:00:00+01:00')

    // Someone starts a pre-queue now, through the API; the form follows, and its times are locked.
    const now = clock.now()
    const live = { prequeueAt: new Date(now - 60_000).toISOString(), opensAt: new Date(now + 3600_000).toISOString() }
    const etag = (await api('GET', '/rooms/presale')).body.etag
    expect((await api('PATCH', '/rooms/presale', { body: { schedule: live }, headers: { 'if-match': etag } })).status).toBe(200)
    await expect.poll(() => box('opensAt').inputValue(), PAGE_WAIT).toBe(live.opensAt)
    expect(await box('closesAt').inputValue()).toBe('')
    await expect.poll(() => page.locator('#p-schedule').getAttribute('data-phase'), PAGE_WAIT).toBe('prequeue')
    expect(await text(page, '#p-schedule')).toContain(
      'Live now: pre-queue: arrivals join the draw, nobody is let in; the sale opens in 1 h',
    )
    await group.getByLabel('Sale opens').fill(new Date(now + 7200_000).toISOString())
    await save.click()
    await expect.poll(() => error('opensAt'), PAGE_WAIT).toBe('Cannot change once the pre-queue has begun: the draw depends on it.')
    // Removing it is refused too, under the first time the draw depends on.
    await page.getByRole('button', { name: 'No schedule: empty the three boxes' }).click()
    for (const k of SCHEDULE_KEYS) expect(await box(k).inputValue()).toBe('')
    expect(await error('opensAt')).toBe('')
    await save.click()
    await expect.poll(() => error('prequeueAt'), PAGE_WAIT).toBe('Cannot change once the pre-queue has begun: the draw depends on it.')
    expect(edge.deps.rooms.get('presale')?.schedule).toEqual(live)

    // Once the sale has opened it can go: all three empty saves no schedule.
    clock.advance(3600_000)
    await save.click()
    await expect.poll(() => text(page, '#save-status'), PAGE_WAIT).toBe('Saved: Schedule none.')
    expect((await api('GET', '/rooms/presale')).body.settings.schedule).toBeNull()
    expect(await text(page, '#p-schedule')).toBe('Live: no schedule.')
    await done(context, page, seen)
  })
  it('links a room to an event and shows its stock as every edge sees it: the counts, sold out or all held, a badge', async () => {
    const { context, page, seen } = await signedIn(DESKTOP, 'presale')
    await expect.poll(() => page.locator('#stock-state').getAttribute('data-state'), PAGE_WAIT).toBe('none')
    expect(await page.locator('#stock-badge').isVisible()).toBe(false)
    const save = page.getByRole('button', { name: 'Save changes' })
    // An id the edge refuses is named next to the field; nothing is saved.
    await page.getByLabel('Event').fill('gig night')
    await save.click()
    await expect
      .poll(() => text(page, '#err-event'), PAGE_WAIT)
      .toBe('Must be null (none) or an id of 1-64 letters, digits, dots, dashes or underscores, starting with a letter or digit.')
    expect(edge.deps.rooms.get('presale')?.event).toBeNull()
    await page.getByLabel('Event').fill('gig')
    await save.click()
    await expect.poll(() => text(page, '#save-status'), PAGE_WAIT).toBe('Saved: Event gig.')
    expect(edge.deps.rooms.get('presale')?.event).toBe('gig')
    // The origin has published nothing for it yet: unknown, and the line moves as usual.
    await expect.poll(() => page.locator('#stock-state').getAttribute('data-state'), PAGE_WAIT).toBe('unknown')
    expect(await text(page, '#stock-event')).toMatch(/^event gig/)
    // The origin publishes the event's stock: 38 of 40 seats sold, 2 held. The edge looks once a second.
    const hold = (id: string, seat: string) => ({ id, expiresAt: clock.now() + 600_000, units: [{ unit: seat, quantity: 1 }] })
    const units = Array.from({ length: 40 }, (_, i) => ({ unit: `seat:A${i + 1}`, capacity: 1, sold: i < 38 ? 1 : 0 }))
    await edge.gate.reconcile('gig', { units, holds: [hold('h1', 'seat:A39'), hold('h2', 'seat:A40')] }, 0, clock.now())
    const look = async () => {
      clock.advance(1000)
      await new Visitor(`http://${HOST}`).request(edge.app, '/_anteroom/status?room=no-such-room')
      await edge.deps.rooms.settled()
    }
    await look()
    await expect.poll(() => page.locator('#stock-state').getAttribute('data-state'), PAGE_WAIT).toBe('all_held')
    expect(await text(page, '#stock-state')).toMatch(/^Everything is held\. Nothing is free, some is held: nobody new is let in/)
    expect([await text(page, '#stock-free'), await text(page, '#stock-held'), await text(page, '#stock-sold')]).toEqual(['0', '2', '38'])
    expect(await text(page, '#stock-badge')).toBe('Everything is held')
    expect((await new Visitor(`http://${HOST}`).status(edge.app, 'presale')).state).toBe('all_held')
    // Both holds are paid for: sold out.
    await edge.gate.sold('gig', 'h1', [{ unit: 'seat:A39', quantity: 1 }], clock.now())
    await edge.gate.sold('gig', 'h2', [{ unit: 'seat:A40', quantity: 1 }], clock.now())
    await look()
    await expect.poll(() => text(page, '#stock-badge'), PAGE_WAIT).toBe('Sold out')
    expect(await page.locator('#stock-state').getAttribute('data-state')).toBe('sold_out')
    expect([await text(page, '#stock-free'), await text(page, '#stock-held'), await text(page, '#stock-sold')]).toEqual(['0', '0', '40'])
    expect(await text(page, '#mode-badge')).toBe('Open line')
    await page.setViewportSize({ width: 1280, height: 900 })
    await page.evaluate(() => window.scrollTo(0, 0))
    await page.screenshot({ path: 'docs/admin-sold-out.png', scale: 'css' })
    // Unlinked again: the room admits as before, and the card says it is not linked.
    await page.getByLabel('Event').fill('')
    await save.click()
    await expect.poll(() => text(page, '#save-status'), PAGE_WAIT).toBe('Saved: Event none.')
    expect(edge.deps.rooms.get('presale')?.event).toBeNull()
    await expect.poll(() => page.locator('#stock-state').getAttribute('data-state'), PAGE_WAIT).toBe('none')
    expect(await page.locator('#stock-badge').isVisible()).toBe(false)
    await done(context, page, seen)
  })
})
