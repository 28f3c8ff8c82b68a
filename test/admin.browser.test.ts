// The admin UI in a real browser (headless Chromium on the edge, see test/support/admin-browser.ts), the dashboard: signing in, the numbers and the chart moving while visitors join, a rate change followed, a conflicting save, a phone in dark mode, the bot defence. It also writes the admin screenshots in docs/, overwriting them on each run.
import { describe, expect, it } from 'vitest'
import {
  api,
  arrivals,
  base,
  browser,
  clock,
  DESKTOP,
  done,
  edge,
  fieldValue,
  HOST,
  join,
  later,
  MAYA,
  PAGE_WAIT,
  PHONE,
  signedIn,
  stats,
  text,
  tick,
  useAdminBrowser,
  watch,
} from './support/admin-browser.js'
import { recordCspViolations } from './support/browser.js'
import { withSocketAddress } from './support/runtimes.js'
import { Visitor } from './support/visitor.js'

useAdminBrowser()

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
})
