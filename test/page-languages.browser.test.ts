// The queue page in the visitor's language and a room's own template, in Debian's headless Chromium
// (playwright-core) against real Node edges on @hono/node-server, on a manual clock. In German
// (Accept-Language), Japanese and Arabic (?lang=, right to left) the page updates itself by polling
// and moves up in place; screenshots docs/queue-page-de.png, -ja.png, -ar.png. A template's own style
// sheet, from an allowed loopback origin, applies, while a sheet it imports from elsewhere is blocked by
// the page's policy; an edge that no longer allows the origin leaves the sheet out. The admin's Page tab
// edits a template (a refused save marked at its line), previews every state, and sets the room's
// language and template; screenshot docs/admin-page.png.
import { mkdir } from 'node:fs/promises'
import type { Browser, BrowserContextOptions, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import type { Edge } from '../src/entry/build.js'
import { QUEUE_ASSETS } from '../src/http/pages.js'
import { launchChromium, recordCspViolations } from './support/browser.js'
import { ManualClock } from './support/clock.js'
import { testEdge } from './support/edge.js'
import { type OriginServer, startOrigin } from './support/origin-server.js'
import { freshDb, T0 } from './support/runtimes.js'
import { serveOnFreePort } from './support/serve.js'
import { Visitor } from './support/visitor.js'

const PHONE: BrowserContextOptions = { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 2 }
const PAGE_WAIT = { timeout: 20_000, interval: 100 }
const ADMIN = 'page-admin-token-0123456789abcdef'

let browser: Browser
let origin: OriginServer
let sheets: OriginServer
const closers: (() => Promise<void>)[] = []

beforeAll(async () => {
  origin = await startOrigin((req, res) => {
    res.setHeader('content-type', 'text/html; charset=utf-8')
    res.end(
      '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Shop</title></head><body><h1>Welcome to the shop</h1></body></html>',
    )
  })
  // The template's own style sheet, on a loopback origin of its own: it imports one more sheet, which
  // the page's policy does not name.
  sheets = await startOrigin((req, res) => {
    res.setHeader('content-type', 'text/css; charset=utf-8')
    if (req.url === '/shop.css')
      res.end('@import url("/imported.css");\nbody { background: rgb(1, 2, 3); }\n.shop-mark { color: rgb(250, 251, 252); }\n')
    else res.end('.shop-mark { border-top: 7px solid rgb(8, 9, 10); }\n')
  })
  browser = await launchChromium()
  await mkdir('docs', { recursive: true })
})

afterAll(async () => {
  await browser?.close()
  for (const close of closers.reverse()) await close()
  await origin?.close()
  await sheets?.close()
})

/** A real edge over HTTP on a free loopback port, on its own manual clock. */
async function serveEdge(rooms: Record<string, unknown>[], o: { redisUrl?: string; env?: Record<string, string> } = {}) {
  const clock = new ManualClock(T0)
  const edge = await testEdge({ rooms, originUrl: origin.url, clock, redisUrl: o.redisUrl, adminTokens: `ops:${ADMIN}`, env: o.env })
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

async function text(page: Page, selector: string): Promise<string> {
  return ((await page.locator(selector).first().textContent()) ?? '').trim()
}

/** What a page did: its main-frame navigations, polls, and anything that went wrong (CSP, errors). */
function watch(page: Page) {
  const seen = { navigations: 0, polls: 0, problems: [] as string[] }
  page.on('framenavigated', (frame) => {
    if (frame === page.mainFrame()) seen.navigations++
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

const LANGUAGES = [
  {
    lang: 'de',
    how: { context: { locale: 'de-DE' }, query: '' },
    headline: 'Sie stehen in der Warteschlange',
    eta20: 'etwa 20 Minuten',
    eta50: 'etwa 50 Minuten',
    ahead: 'Personen vor Ihnen',
    big: '1.234',
  },
  {
    lang: 'ja',
    how: { context: { locale: 'ja-JP' }, query: '' },
    headline: '順番待ちの列に並んでいます',
    eta20: '約20分',
    eta50: '約50分',
    ahead: 'あなたより前の人数',
    big: '1,235',
  },
  {
    lang: 'ar',
    how: { context: { locale: 'en-US' }, query: '?lang=ar' },
    headline: 'أنت في قائمة الانتظار',
    eta20: 'حوالي 20 دقيقة',
    eta50: 'حوالي 50 دقيقة',
    ahead: 'عدد من أمامك',
    big: '1,236',
  },
] as const

describe('the queue page in three languages', () => {
  for (const l of LANGUAGES) {
    it(`${l.lang}: polls in place in its language, the wait rewritten by the script, and lets itself in`, async () => {
      const { edge, clock, base } = await serveEdge([room({ id: 'sale', paths: ['/tickets'], totalActiveUsers: 1, refreshSeconds: 2 })])
      const crowd = [new Visitor(), new Visitor()]
      for (const v of crowd) await v.request(edge.app, '/tickets')
      const bVisitor = crowd[1]?.cookies.get('anteroom_q_sale')?.split('.')[2] as string
      const context = await browser.newContext({ ...PHONE, ...l.how.context })
      const page = await context.newPage()
      const seen = watch(page)
      await recordCspViolations(page)
      await page.goto(`${base}/tickets/show/7${l.how.query}`)
      expect(await page.evaluate(() => document.documentElement.lang)).toBe(l.lang)
      expect(await page.evaluate(() => document.dir)).toBe(l.lang === 'ar' ? 'rtl' : '')
      expect(await text(page, 'h1')).toBe(l.headline)
      expect(await text(page, '#position')).toBe('2')
      expect(await text(page, '#eta')).toBe(l.eta20)
      // The script sets its cookie and the page reloads once (its first page carried Refresh); then it polls.
      await expect
        .poll(async () => (await context.cookies()).some((c) => c.name === 'anteroom_js' && c.value === QUEUE_ASSETS.js.version), PAGE_WAIT)
        .toBe(true)
      await expect.poll(() => seen.navigations, PAGE_WAIT).toBe(2)
      // The language stayed: by the browser's, or by the cookie ?lang= left.
      expect(await page.evaluate(() => document.documentElement.lang)).toBe(l.lang)
      const pollsBefore = seen.polls
      await expect.poll(() => seen.polls, PAGE_WAIT).toBeGreaterThan(pollsBefore + 1)

      // A's session runs out: the browser moves up in place, and the wait is rewritten in its language.
      await clock.advance(601_000)
      await expect.poll(() => text(page, '#position'), PAGE_WAIT).toBe('1')
      await clock.advance(1000)
      await expect.poll(() => text(page, '#eta'), PAGE_WAIT).toBe(l.eta50)
      expect(await text(page, '#eta-range')).not.toBe('')
      expect(seen.navigations).toBe(2)
      if (l.lang === 'ar')
        expect((await context.cookies()).find((c) => c.name === 'anteroom_lang')).toMatchObject({ value: 'ar', sameSite: 'Lax' })

      // B leaves: the next poll lets the browser in.
      expect(await edge.deps.queue.endSession('sale', bVisitor)).toBe(true)
      await expect.poll(() => page.locator('h1').textContent(), PAGE_WAIT).toBe('Welcome to the shop')
      expect(await page.evaluate(() => (window as unknown as { cspViolations: string[] }).cspViolations)).toEqual([])
      expect(seen.problems).toEqual([])
      await context.close()
    })
  }

  it('a busy line in each: numbers grouped as the language writes them, Arabic reading right to left (screenshots)', async () => {
    const look = await serveEdge([room({ id: 'look', paths: ['/look'], totalActiveUsers: 10, newUsersPerMinute: 600, refreshSeconds: 30 })])
    for (let i = 0; i < 1243; i++) await new Visitor().request(look.edge.app, '/look')
    for (const l of LANGUAGES) {
      const context = await browser.newContext({ ...PHONE, ...l.how.context })
      const page = await context.newPage()
      const seen = watch(page)
      await page.goto(`${look.base}/look/seat/12${l.how.query}`)
      expect(await text(page, '#position')).toBe(l.big)
      expect(await text(page, 'dl dt')).toBe(l.ahead)
      const [dt, dd] = [await page.locator('dl dt').first().boundingBox(), await page.locator('dl dd').first().boundingBox()]
      // Each page is another visitor, the line's next place. Label and value share a row; in Arabic the
      // label is on the right and the value on the left.
      expect(dt && dd && Math.abs(dt.y - dd.y) < 2).toBe(true)
      if (dt && dd) expect(l.lang === 'ar' ? dd.x < dt.x : dt.x < dd.x).toBe(true)
      const fit = await page.evaluate(() => ({ scrollWidth: document.scrollingElement?.scrollWidth ?? 0, innerWidth }))
      expect(fit).toEqual({ scrollWidth: 390, innerWidth: 390 })
      expect(seen.problems).toEqual([])
      await page.screenshot({ path: `docs/queue-page-${l.lang}.png`, scale: 'css' })
      await context.close()
    }
  })
})

describe("a room's own template in Chromium", () => {
  it('applies its style sheet from an allowed origin; a sheet it imports from elsewhere is blocked; an edge that no longer allows it leaves it out', async () => {
    const redisUrl = `${inject('redisUrl')}/${await freshDb(inject('redisUrl'))}`
    const rooms = [room({ id: 'shop', paths: ['/shop'], totalActiveUsers: 1, refreshSeconds: 2, locale: 'fr' })]
    const allowed = await serveEdge(rooms, { redisUrl, env: { ANTEROOM_TEMPLATE_STYLE_ORIGINS: sheets.url } })
    const auth = { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' }
    const source =
      '<section class="card">\n<h1 class="shop-mark">{{headline}}</h1>\n{{#hasPlace}}<p>#<span id="position">{{position}}</span></p>{{/hasPlace}}\n<p>{{lead}}</p>\n</section>'
    const made = await allowed.edge.app.request('http://127.0.0.1/_anteroom/api/templates/shop', {
      method: 'PUT',
      headers: { ...auth, 'if-none-match': '*' },
      body: JSON.stringify({ source, stylesheet: `${sheets.url}/shop.css` }),
    })
    expect(made.status).toBe(201)
    const etag = (await allowed.edge.app.request('http://127.0.0.1/_anteroom/api/rooms/shop', { headers: auth })).headers.get(
      'etag',
    ) as string
    const patched = await allowed.edge.app.request('http://127.0.0.1/_anteroom/api/rooms/shop', {
      method: 'PATCH',
      headers: { ...auth, 'if-match': etag },
      body: JSON.stringify({ template: 'shop' }),
    })
    expect(patched.status).toBe(200)
    await new Visitor().request(allowed.edge.app, '/shop') // holds the one slot

    // A browser whose languages the page has none of (Swedish): the room's language, French.
    const context = await browser.newContext({ ...PHONE, locale: 'sv-SE' })
    const page = await context.newPage()
    const seen = watch(page)
    await recordCspViolations(page)
    const res = await page.goto(`${allowed.base}/shop/a`)
    expect(res?.headers()['content-security-policy']).toContain(`style-src ${allowed.base}/_anteroom/queue.css ${sheets.url}/shop.css;`)
    expect(await text(page, 'h1')).toBe('Vous êtes dans la file d’attente')
    expect(await page.locator('body').evaluate((el) => getComputedStyle(el).backgroundColor)).toBe('rgb(1, 2, 3)')
    expect(await page.locator('.shop-mark').evaluate((el) => getComputedStyle(el).color)).toBe('rgb(250, 251, 252)')
    // The imported sheet is not the one the policy names: blocked, and never fetched.
    await expect
      .poll(() => page.evaluate(() => (window as unknown as { cspViolations: string[] }).cspViolations), PAGE_WAIT)
      .toEqual([expect.stringMatching(new RegExp(`^style-src(-elem)? ${sheets.url}/imported\\.css$`))])
    expect(await page.locator('.shop-mark').evaluate((el) => getComputedStyle(el).borderTopWidth)).toBe('0px')
    expect(sheets.requests.map((r) => r.url)).not.toContain('/imported.css')
    // Its script polls as on the built-in page.
    await expect.poll(async () => (await context.cookies()).some((c) => c.name === 'anteroom_js'), PAGE_WAIT).toBe(true)
    expect(seen.problems.filter((p) => !/imported\.css/.test(p))).toEqual([])
    await context.close()

    // Another edge on the same store whose config no longer allows that origin: the template without its sheet.
    const strict = await serveEdge(rooms, { redisUrl })
    const before = sheets.requests.length
    const other = await browser.newContext(PHONE)
    const page2 = await other.newPage()
    await recordCspViolations(page2)
    const res2 = await page2.goto(`${strict.base}/shop/a`)
    expect(await page2.locator('.shop-mark').count()).toBe(1)
    expect(await page2.locator(`link[href^="${sheets.url}"]`).count()).toBe(0)
    expect(res2?.headers()['content-security-policy']).not.toContain(sheets.url)
    expect(await page2.locator('body').evaluate((el) => getComputedStyle(el).backgroundColor)).toBe('rgb(246, 247, 251)')
    expect(sheets.requests.length).toBe(before)
    await other.close()
  })
})

describe("the admin's Page tab", () => {
  it('edits a template (a refused save marked at its line), previews every state, sets the room’s language and template', async () => {
    const { base } = await serveEdge([room({ id: 'sale', paths: ['/'], totalActiveUsers: 1, refreshSeconds: 20 })], {
      env: { ANTEROOM_TEMPLATE_STYLE_ORIGINS: sheets.url },
    })
    const context = await browser.newContext({ viewport: { width: 1280, height: 2240 }, locale: 'en-US', timezoneId: 'UTC' })
    const page = await context.newPage()
    const problems: string[] = []
    page.on('pageerror', (err) => problems.push(err.message))
    page.on('console', (msg) => {
      if (/Content.Security.Policy/i.test(msg.text()) || (msg.type() === 'error' && !/Failed to load resource/.test(msg.text())))
        problems.push(msg.text())
    })
    await page.goto(`${base}/_anteroom/admin`)
    await page.getByLabel('Admin token').fill(ADMIN)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.locator('#app').waitFor({ state: 'visible' })
    // The settings form has the room's language and template as fields of their own.
    await expect.poll(() => page.locator('#f-locale option').count(), PAGE_WAIT).toBe(10)
    expect(await page.locator('#f-template').count()).toBe(1)

    await page.getByRole('tab', { name: 'Page' }).click()
    expect(await page.getByRole('tab', { name: 'Page' }).getAttribute('aria-selected')).toBe('true')
    await expect.poll(() => page.locator('#previews iframe').count(), PAGE_WAIT).toBe(11)
    // No template yet: the previews are the room's built-in page, in each state.
    const paused = page.frameLocator('iframe[title="Preview: Paused"]')
    await expect.poll(() => paused.locator('h1').textContent(), PAGE_WAIT).toBe('The line is paused')
    expect(await page.locator('#tpl-vars').textContent()).toContain('{{etaRange}}')

    // A new template with a mistake on line 3: the edge's reason, at that line.
    await page.locator('#tpl-name').fill('spring')
    await page.locator('#tpl-source').fill('<section class="card">\n<h1>{{headline}}</h1>\n<p>{{wait}}</p>\n</section>')
    await page.getByRole('button', { name: 'Save template' }).click()
    await expect
      .poll(() => text(page, '#tpl-err-source'), PAGE_WAIT)
      .toBe('line 3: {{wait}} is not a variable of the page (see the list of variables)')
    expect(await page.locator('#tpl-gutter li.bad').textContent()).toBe('3')
    expect(await page.locator('#tpl-source').getAttribute('aria-invalid')).toBe('true')
    expect(await text(page, '#tpl-status')).toMatch(/^Not saved: line 3: /)
    // A style sheet from an origin not allowed: told at its field.
    await page
      .locator('#tpl-source')
      .fill('<section class="card spring">\n<h1>{{headline}}</h1>\n<p>{{eta}}</p>\n<p>{{lead}}</p>\n</section>')
    await page.locator('#tpl-stylesheet').fill('https://evil.example/x.css')
    await page.getByRole('button', { name: 'Save template' }).click()
    await expect
      .poll(() => text(page, '#tpl-err-stylesheet'), PAGE_WAIT)
      .toMatch(/its origin https:\/\/evil\.example is not in ANTEROOM_TEMPLATE_STYLE_ORIGINS/)
    await page.locator('#tpl-stylesheet').fill(`${sheets.url}/plain.css`)
    await page.getByRole('button', { name: 'Save template' }).click()
    await expect.poll(() => text(page, '#tpl-status'), PAGE_WAIT).toBe('Saved: spring.')
    await expect.poll(() => text(page, '#tpl-list'), PAGE_WAIT).toContain('spring not used')

    // Every state's preview is the template now, in the language chosen for the previews.
    await page.locator('#preview-lang').selectOption('de')
    for (const [state, headline] of [
      ['Queued', 'You are in line'],
      ['Paused', 'Die Warteschlange ist angehalten'],
      ['Sold out', 'Ausverkauft'],
      ['Challenge', 'Sie werden eingereiht'],
    ]) {
      const frame = page.frameLocator(`iframe[title="Preview: ${state}"]`)
      await expect
        .poll(() => frame.locator('section.spring h1').textContent(), PAGE_WAIT)
        .toBe(state === 'Queued' ? 'Sie stehen in der Warteschlange' : headline)
    }

    // The room takes the template and Polish: a visitor's page is the template, in Polish.
    await page.locator('#page-template').selectOption('spring')
    await page.locator('#page-locale').selectOption('pl')
    await page.locator('#page-room-save').click()
    await expect.poll(() => text(page, '#page-room-status'), PAGE_WAIT).toBe('Saved: pl, spring.')
    await expect.poll(() => text(page, '#tpl-list'), PAGE_WAIT).toContain('used by sale')
    await expect.poll(() => text(page, '#audit-rows'), PAGE_WAIT).toContain('Made the page template “spring”')
    // Every frame shows its page (the previews were drawn again after the save) before the screenshot.
    for (const title of await page.locator('#previews iframe').evaluateAll((els) => els.map((el) => el.getAttribute('title')))) {
      await expect.poll(() => page.frameLocator(`iframe[title="${title}"]`).locator('section.spring h1').count(), PAGE_WAIT).toBe(1)
    }
    await page.screenshot({ path: 'docs/admin-page.png', scale: 'css' })

    const visitor = await browser.newContext({ ...PHONE, locale: 'sv-SE' })
    const vpage = await visitor.newPage()
    await new Visitor(base).request({ request: (u, i) => fetch(u, i) }, '/') // holds the one slot
    await vpage.goto(`${base}/x`)
    expect(await vpage.evaluate(() => document.documentElement.lang)).toBe('pl')
    expect(await text(vpage, 'section.spring h1')).toBe('Jesteś w kolejce')
    await visitor.close()
    expect(problems).toEqual([])
    await context.close()
  })
})
