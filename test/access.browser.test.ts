// Access codes in a real browser: Debian's headless Chromium (playwright-core) against a real Node edge
// on @hono/node-server over a real redis-server, with a manual clock. An admin makes codes and an
// invite link in the Access view (a bad value is told next to its field), sees them listed with their
// uses, revokes the link after a confirmation, and finds it all in the audit log; a visitor in line
// types a code into the queue page's form and is put in the priority lane, before the public line; a
// wrong code gets a page that says so. Screenshots: docs/admin-access.png, docs/queue-page-code.png.
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import type { Edge } from '../src/entry/build.js'
import { type ChromiumOnApp, chromiumOn, recordCspViolations } from './support/browser.js'
import { ManualClock } from './support/clock.js'
import { testEdge } from './support/edge.js'
import { type OriginServer, startOrigin } from './support/origin-server.js'
import { freshDb, T0 } from './support/runtimes.js'

const ADMIN = 'nina-admin-token-0123456789abcdef'
const PAGE_WAIT = { timeout: 20_000, interval: 100 }

let browser: Browser
let origin: OriginServer
let edge: Edge
let chromium: ChromiumOnApp | undefined
let base: string
const clock = new ManualClock(T0)

beforeAll(async () => {
  origin = await startOrigin()
  edge = await testEdge({
    rooms: [
      {
        id: 'presale',
        paths: ['/'],
        totalActiveUsers: 1,
        newUsersPerMinute: 60,
        sessionDurationSeconds: 600,
        refreshSeconds: 20,
        accessCodes: 'on',
        laneActiveUsers: 50,
        laneUsersPerMinute: 30,
        title: 'Summer tour: fan club presale',
      },
    ],
    originUrl: origin.url,
    redisUrl: `${inject('redisUrl')}/${await freshDb(inject('redisUrl'))}`,
    clock,
    adminTokens: `nina:${ADMIN}`,
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

const text = async (page: Page, selector: string) => ((await page.locator(selector).textContent()) ?? '').trim()

/** A page that records script errors, CSP violations and console errors (not Chromium's line for each 4xx). */
async function watchedPage(viewport: { width: number; height: number }) {
  const context = await browser.newContext({ viewport, locale: 'en-US', timezoneId: 'UTC' })
  const page = await context.newPage()
  const problems: string[] = []
  page.on('pageerror', (err) => problems.push(err.message))
  page.on('console', (msg) => {
    if (/Content.Security.Policy/i.test(msg.text()) || (msg.type() === 'error' && !/Failed to load resource/.test(msg.text())))
      problems.push(msg.text())
  })
  await recordCspViolations(page)
  const violations = () => page.evaluate(() => (window as unknown as { cspViolations: string[] }).cspViolations)
  return { context, page, problems, violations }
}

describe('access codes in headless Chromium', () => {
  let codes: string[] = []

  it('the Access view makes codes and a link, tells a bad value next to its field, lists uses, revokes after a confirmation', async () => {
    const { context, page, problems, violations } = await watchedPage({ width: 1280, height: 1200 })
    await page.goto(`${base}/_anteroom/admin`)
    await page.getByLabel('Admin token').fill(ADMIN)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.locator('#app').waitFor({ state: 'visible' })
    await expect.poll(() => text(page, '#stat-store'), PAGE_WAIT).toBe('Up')

    await page.getByRole('tab', { name: 'Access' }).click()
    expect(await page.getByRole('tab', { name: 'Access' }).getAttribute('aria-selected')).toBe('true')
    expect(await page.locator('#room > .stats').isVisible()).toBe(false)
    await expect.poll(() => text(page, '#access-rows'), PAGE_WAIT).toBe('No codes or links yet.')
    expect(await page.locator('#access-takes').isVisible()).toBe(false)
    await expect.poll(() => text(page, '#access-lane-cap'), PAGE_WAIT).toBe('50')
    expect(await text(page, '#access-lane-rate')).toBe('30')

    // A bad value: the edge's words next to the field, the field marked, nothing made.
    await page.getByLabel('How many codes').fill('0')
    await page.getByRole('button', { name: 'Make codes' }).click()
    await expect.poll(() => text(page, '#access-err-count'), PAGE_WAIT).toBe('Must be a whole number from 1 to 500.')
    expect(await page.getByLabel('How many codes').getAttribute('aria-invalid')).toBe('true')
    expect(await text(page, '#access-status')).toBe('Not made: count: must be a whole number from 1 to 500')
    await page.getByLabel('Label').fill('x'.repeat(80))
    await page.getByLabel('Label').evaluate((el: HTMLInputElement) => {
      el.value = 'bad\u0007label'
    })
    await page.getByLabel('How many codes').fill('3')
    expect(await text(page, '#access-err-count')).toBe('')
    await page.getByRole('button', { name: 'Make codes' }).click()
    await expect
      .poll(() => text(page, '#access-err-label'), PAGE_WAIT)
      .toBe('Must be at most 80 characters, none of them a control character.')

    // Three codes, shown once, listed with their uses.
    await page.getByLabel('Label').fill('Fan club')
    await page.getByLabel('Uses each').fill('1')
    await page.getByRole('button', { name: 'Make codes' }).click()
    await expect.poll(() => page.locator('#access-codes li').count(), PAGE_WAIT).toBe(3)
    codes = await page.locator('#access-codes li').allTextContents()
    for (const c of codes) expect(c).toMatch(/^[0-9A-HJKMNP-TV-Z]{4}(-[0-9A-HJKMNP-TV-Z]{4}){3}$/)
    expect(await text(page, '#access-result .notice')).toMatch(/not shown again/)
    expect(await page.locator('#access-download').getAttribute('download')).toBe('access-codes-presale.csv')
    await expect.poll(() => page.locator('#access-rows tr[data-state="active"]').count(), PAGE_WAIT).toBe(3)
    expect(await page.locator('#access-rows tr').first().locator('td').allTextContents()).toEqual([
      'Fan club',
      `Code …${codes[2]?.slice(-4)}`,
      'Before the public line',
      '0 of 1',
      expect.stringMatching(/2027/),
      'Active',
      'nina',
      'Revoke',
    ])

    // An invite link to the separate lane: its URL, then revoked after a confirmation (cancelled first).
    await page.getByLabel('An invite link').check()
    expect(await page.getByLabel('How many codes').isVisible()).toBe(false)
    await page.getByLabel('Lane', { exact: true }).selectOption('separate')
    await page.getByLabel('Uses each').fill('25')
    await page.getByLabel('Label').fill('Partner newsletter')
    await page.getByRole('button', { name: 'Make the link' }).click()
    await expect.poll(() => text(page, '#access-link'), PAGE_WAIT).toMatch(new RegExp(`^${base}/\\?code=i1\\.presale\\.`))
    await expect.poll(() => page.locator('#access-rows tr').count(), PAGE_WAIT).toBe(4)
    const linkRow = page.locator('#access-rows tr').first()
    expect(await linkRow.locator('td').nth(1).textContent()).toBe('Invite link')
    await page.evaluate(() => window.scrollTo(0, 0))
    await page.screenshot({ path: 'docs/admin-access.png', scale: 'css' })
    await linkRow.getByRole('button', { name: 'Revoke' }).click()
    const dialog = page.getByRole('dialog')
    await expect.poll(() => dialog.isVisible(), PAGE_WAIT).toBe(true)
    expect(await text(page, '#confirm-title')).toBe('Revoke this invite link?')
    await page.locator('#confirm-cancel').click()
    await expect.poll(() => text(page, '#access-status'), PAGE_WAIT).toBe('Nothing was revoked.')
    await linkRow.getByRole('button', { name: 'Revoke' }).click()
    await page.locator('#confirm-ok').click()
    await expect.poll(() => page.locator('#access-rows tr').first().getAttribute('data-state'), PAGE_WAIT).toBe('revoked')
    expect(await text(page, '#access-status')).toBe('Revoked this invite link.')
    // Shown again from its terms, revoked as it is.
    await page.locator('#access-rows tr').first().getByRole('button', { name: 'Show link' }).click()
    await expect.poll(() => text(page, '#access-result-heading'), PAGE_WAIT).toBe('The invite link')

    // The audit log (the Live view's Recent changes) has both makings and the revocation, and no code.
    await page.getByRole('tab', { name: 'Live' }).click()
    await expect
      .poll(() => page.locator('#audit-rows tr td:last-child').allTextContents(), PAGE_WAIT)
      .toEqual([
        'Revoked an invite link “Partner newsletter” (0 of 25 used)',
        'Made an invite link (Separate lane, 25 uses each, “Partner newsletter”)',
        'Made 3 access codes (Before the public line, 1 use each, “Fan club”)',
      ])
    expect(await page.locator('#audit-rows').textContent()).not.toContain(codes[0] as string)
    expect(await violations()).toEqual([])
    expect(problems).toEqual([])
    await context.close()
  })

  it('a visitor in line types a code into the queue page and is put before the public line; a wrong one is told so', async () => {
    expect(codes).toHaveLength(3)
    // The room's one slot is taken, and two visitors wait in the public line.
    for (let i = 0; i < 3; i++) await fetch(`${base}/_anteroom/status?room=presale`, { headers: { accept: 'application/json' } })
    const { context, page, problems, violations } = await watchedPage({ width: 400, height: 900 })
    await page.goto(`${base}/`)
    // (Chromium's own requests for /favicon.ico are visitors of the room too: the place is read, not assumed.)
    const before = await text(page, '#position')
    expect(Number(before)).toBeGreaterThanOrEqual(3)
    expect(await text(page, '#access-heading')).toBe('Have an access code?')
    // A wrong code: a page that says so, with its status; the place is kept.
    await page.getByLabel('Access code', { exact: true }).fill('ABCD-EFGH-JKMN-PQRS')
    const [wrong] = await Promise.all([page.waitForNavigation(), page.getByRole('button', { name: 'Use code' }).click()])
    expect(wrong?.status()).toBe(400)
    expect(await page.locator('body').textContent()).toMatch(/not valid/)
    await page.goto(`${base}/`)
    expect(await text(page, '#position')).toBe(before)
    // The right one, typed in lower case: the edge redeems it and sends the browser back without it.
    await page.getByLabel('Access code', { exact: true }).fill((codes[0] as string).toLowerCase())
    await Promise.all([page.waitForURL(`${base}/`), page.getByRole('button', { name: 'Use code' }).click()])
    expect(await text(page, '#position')).toBe('1')
    expect(await text(page, '#lane')).toBe('You are in the priority lane: you are let in before the public line.')
    await page.screenshot({ path: 'docs/queue-page-code.png', scale: 'css' })
    // The Access view's list now counts the use.
    const list = (await (
      await fetch(`${base}/_anteroom/api/rooms/presale/access`, { headers: { authorization: `Bearer ${ADMIN}` } })
    ).json()) as { grants: { hint: string; used: number; state: string }[] }
    const used = list.grants.find((g) => g.hint === codes[0]?.slice(-4))
    expect(used).toMatchObject({ used: 1, state: 'used_up' })
    expect(await violations()).toEqual([])
    expect(problems).toEqual([])
    await context.close()
  })
})
