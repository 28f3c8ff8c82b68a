// The admin UI in a real browser, acting on a room: confirmations before closing or ending sessions, the CSRF header and sign-out, the sign-in lockout, a scheduled sale set live, a room linked to an event's stock (and docs/admin-sold-out.png).
import { describe, expect, it } from 'vitest'
import {
  api,
  base,
  browser,
  clock,
  DESKTOP,
  done,
  edge,
  fieldValue,
  HOST,
  join,
  MAYA,
  PAGE_WAIT,
  SCHEDULE_KEYS,
  signedIn,
  stats,
  text,
  useAdminBrowser,
  watch,
} from './support/admin-browser.js'
import { recordCspViolations } from './support/browser.js'
import { Visitor } from './support/visitor.js'

useAdminBrowser()

describe('the admin UI in headless Chromium', () => {
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
