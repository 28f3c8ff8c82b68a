// The admin UI's Bypass & checks view in a real browser: Debian's headless Chromium against a real Node
// edge on @hono/node-server. It shows a room's rules with what each let past (a request let past by
// the room's network rule first), names the field of a refused rule next to it, adds, changes and
// removes rules (the removal after a confirmation), switches the human check on, and the audit log
// says what was done. The test writes docs/admin-bypass.png.
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Edge } from '../src/entry/build.js'
import { type ChromiumOnApp, chromiumOn, recordCspViolations } from './support/browser.js'
import { ManualClock } from './support/clock.js'
import { testEdge } from './support/edge.js'
import { type OriginServer, startOrigin } from './support/origin-server.js'
import { T0, withSocketAddress } from './support/runtimes.js'
import { Visitor } from './support/visitor.js'

const ADMIN = 'ines-admin-token-0123456789abcdef'
const PAGE_WAIT = { timeout: 20_000, interval: 100 }

let browser: Browser
let origin: OriginServer
let edge: Edge
let chromium: ChromiumOnApp | undefined
let base: string

beforeAll(async () => {
  origin = await startOrigin()
  edge = await testEdge({
    rooms: [
      {
        id: 'sale',
        paths: ['/tickets'],
        totalActiveUsers: 1,
        newUsersPerMinute: 60,
        bypass: [
          { id: 'office', kind: 'cidr', networks: ['10.20.0.0/16'] },
          { id: 'search', kind: 'crawler', crawlers: ['googlebot', 'bingbot'] },
        ],
      },
    ],
    originUrl: origin.url,
    clock: new ManualClock(T0),
    adminTokens: `ines:${ADMIN}`,
    env: {
      ANTEROOM_BYPASS_SECRETS: `partner-a:${'a'.repeat(40)},partner-b:${'b'.repeat(40)}`,
      ANTEROOM_HUMAN_CHECK_SECRET: 'provider-secret-for-the-view',
      ANTEROOM_HUMAN_CHECK_SITE_KEY: '0x4AAAAAAAtestkey',
    },
  })
  // Two requests let past by the office's network.
  const app = withSocketAddress(edge.app)
  for (const ip of ['10.20.1.1', '10.20.1.2'])
    expect((await new Visitor('http://shop.test', ip).request(app, '/tickets/x')).status).toBe(200)
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

describe('the Bypass & checks view in headless Chromium', () => {
  it('shows the rules and their counts, names a bad field, adds, changes and removes rules, and switches the human check on', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 1200 }, locale: 'en-US', timezoneId: 'UTC' })
    const page = await context.newPage()
    const problems: string[] = []
    page.on('pageerror', (err) => problems.push(err.message))
    page.on('console', (msg) => {
      // Chromium logs every 4xx answer ("Failed to load resource"): the refused rule, the session probe.
      if (/Content.Security.Policy/i.test(msg.text()) || (msg.type() === 'error' && !/Failed to load resource/.test(msg.text())))
        problems.push(msg.text())
    })
    await recordCspViolations(page)
    await page.goto(`${base}/_anteroom/admin`)
    await page.getByLabel('Admin token').fill(ADMIN)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.locator('#app').waitFor({ state: 'visible' })
    await page.getByRole('tab', { name: 'Bypass & checks' }).click()
    expect(await page.getByRole('tab', { name: 'Bypass & checks' }).getAttribute('aria-selected')).toBe('true')
    expect(await page.locator('#room > .stats').isVisible()).toBe(false)

    // The rules, with what each let past on this edge.
    await expect.poll(() => text(page, '#bypass-span'), PAGE_WAIT).toBe('2 rules in sale')
    expect(await text(page, 'tr[data-rule="office"] td.bypass-what')).toBe('10.20.0.0/16')
    expect(await text(page, 'td[data-count="office"]')).toBe('2')
    expect(await text(page, 'tr[data-rule="search"] td.bypass-what')).toBe('googlebot, bingbot')
    expect(await page.locator('#bypass-secret option').allTextContents()).toEqual(['partner-a', 'partner-b'])
    expect(await text(page, '#hc-provider')).toBe('provider: site key 0x4AAAAAAAtestkey')

    // A block with bits past its prefix: refused, the edge's words next to the box.
    await page.getByLabel('Rule id').fill('venue')
    await page.getByLabel('Kind').selectOption('cidr')
    await page.getByLabel('Networks').fill('192.0.2.0/24\n10.30.0.1/16')
    await page.getByRole('button', { name: 'Add the rule' }).click()
    await expect.poll(() => text(page, '#bypass-err-networks'), PAGE_WAIT).toBe('Has bits set past the /16: write 10.30.0.0/16.')
    expect(await page.getByLabel('Networks').getAttribute('aria-invalid')).toBe('true')
    await page.getByLabel('Networks').fill('192.0.2.0/24\n10.30.0.0/16')
    expect(await text(page, '#bypass-err-networks')).toBe('')
    await page.getByRole('button', { name: 'Add the rule' }).click()
    await expect.poll(() => text(page, '#bypass-status'), PAGE_WAIT).toBe('Added the rule venue.')
    await expect.poll(() => text(page, 'tr[data-rule="venue"] td.bypass-what'), PAGE_WAIT).toBe('192.0.2.0/24, 10.30.0.0/16')

    // A path that is not in canonical form, then a header rule naming a configured secret.
    await page.getByLabel('Rule id').fill('static')
    await page.getByLabel('Kind').selectOption('path')
    await page.getByLabel('Paths').fill('/tickets/%73tatic')
    await page.getByRole('button', { name: 'Add the rule' }).click()
    await expect.poll(() => text(page, '#bypass-err-paths'), PAGE_WAIT).toBe('Must be written in canonical form: /tickets/static.')
    await page.getByLabel('Rule id').fill('partner')
    await page.getByLabel('Kind').selectOption('header')
    await page.getByLabel('Secret').selectOption('partner-b')
    await page.getByRole('button', { name: 'Add the rule' }).click()
    await expect.poll(() => text(page, '#bypass-status'), PAGE_WAIT).toBe('Added the rule partner.')
    await expect
      .poll(() => text(page, 'tr[data-rule="partner"] td.bypass-what'), PAGE_WAIT)
      .toBe('Anteroom-Bypass with the secret partner-b')

    // Change a rule: its id stays, its networks change.
    await page.locator('button[data-edit="venue"]').click()
    expect(await page.getByLabel('Rule id').getAttribute('readonly')).toBe('')
    await page.getByLabel('Networks').fill('10.31.0.0/16')
    await page.getByRole('button', { name: 'Save the rule' }).click()
    await expect.poll(() => text(page, '#bypass-status'), PAGE_WAIT).toBe('Saved the rule venue.')
    await expect.poll(() => text(page, 'tr[data-rule="venue"] td.bypass-what'), PAGE_WAIT).toBe('10.31.0.0/16')

    // The human check, on.
    await page.getByLabel('Before a place').selectOption('turnstile')
    await page.getByRole('button', { name: 'Save', exact: true }).click()
    await expect.poll(() => text(page, '#hc-status'), PAGE_WAIT).toBe('Saved.')
    expect((await edge.deps.rooms.get('sale'))?.humanCheck).toBe('turnstile')
    await page.evaluate(() => window.scrollTo(0, 0))
    await page.screenshot({ path: 'docs/admin-bypass.png', scale: 'css', fullPage: true })

    // Remove one, after a confirmation.
    await page.locator('button[data-remove="partner"]').click()
    await expect.poll(() => text(page, '#confirm-title'), PAGE_WAIT).toBe('Remove the rule partner?')
    await page.locator('#confirm-ok').click()
    await expect.poll(() => text(page, '#bypass-status'), PAGE_WAIT).toBe('Removed the rule partner.')
    await expect.poll(() => page.locator('tr[data-rule="partner"]').count(), PAGE_WAIT).toBe(0)
    expect((await edge.deps.rooms.get('sale'))?.bypass.map((r) => r.id)).toEqual(['office', 'search', 'venue'])

    // The audit log (the Live view) says what was done, and by whom.
    await page.getByRole('tab', { name: 'Live' }).click()
    await expect
      .poll(() => page.locator('#audit-rows tr').allTextContents(), PAGE_WAIT)
      .toEqual(
        expect.arrayContaining([
          expect.stringContaining('Removed the Secret header rule partner'),
          expect.stringContaining('Changed the Client network rule venue (192.0.2.0/24, 10.30.0.0/16 → 10.31.0.0/16)'),
          expect.stringContaining('Added the Client network rule venue (192.0.2.0/24, 10.30.0.0/16)'),
        ]),
      )
    expect(await page.evaluate(() => (window as unknown as { cspViolations: string[] }).cspViolations)).toEqual([])
    expect(problems).toEqual([])
    await context.close()
  })
})
