// The booking origin's demo page in headless Chromium, through the edge as `npm start` wires it:
// a person picks seats, holds them, pays, and sees the seat map change.
import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { buildBooking } from '../src/entry/booking.js'
import type { Edge } from '../src/entry/build.js'
import { launchChromium } from './support/browser.js'
import { testEdge } from './support/edge.js'
import { freePort } from './support/redis-server.js'
import { type Served, serveOnFreePort } from './support/serve.js'

let browser: Browser
let edge: Edge
let booking: Awaited<ReturnType<typeof buildBooking>>
let edgeUrl: string
const servers: Served[] = []

beforeAll(async () => {
  const [edgePort, originPort] = [await freePort(), await freePort()]
  edgeUrl = `http://127.0.0.1:${edgePort}`
  booking = await buildBooking({
    databaseUrl: inject('postgresUrl'),
    jwksUrl: `${edgeUrl}/.well-known/jwks.json`,
    issuer: 'anteroom',
    audience: 'origin',
    room: 'page-demo',
    eventId: 'page-demo',
  })
  edge = await testEdge({
    rooms: [{ id: 'page-demo', paths: ['/'], totalActiveUsers: 10, newUsersPerMinute: 600 }],
    originUrl: `http://127.0.0.1:${originPort}`,
  })
  // Each knows the other's URL before it starts: the ports are picked first.
  servers.push(await serveOnFreePort(booking.app.fetch, { port: originPort }))
  servers.push(await serveOnFreePort(edge.app.fetch, { port: edgePort }))
  browser = await launchChromium()
})
afterAll(async () => {
  await browser?.close()
  for (const s of servers) await s.close()
  await edge?.close()
  await booking?.close()
})

describe('the demo booking page', () => {
  it('holds two seats and pays for them, and another visitor sees them sold', async () => {
    const page = await (await browser.newContext()).newPage()
    const errors: string[] = []
    page.on('pageerror', (e) => errors.push(e.message))
    await page.goto(`${edgeUrl}/?event=page-demo`)
    await expect
      .poll(() => page.locator('button.seat').count(), { timeout: 15_000 })
      .toBe(40)
      .catch(async (err) => {
        throw new Error(`${err}: ${(await page.content()).slice(0, 3000)}`)
      })
    await page.getByRole('button', { name: 'B3', exact: true }).click()
    await page.getByRole('button', { name: 'B4', exact: true }).click()
    await page.getByRole('button', { name: 'Hold seats' }).click()
    await expect.poll(() => page.locator('#message').textContent(), { timeout: 15_000 }).toMatch(/^Held B3, B4 until/)
    await page.getByRole('button', { name: 'Pay' }).click()
    await expect.poll(() => page.locator('#message').textContent(), { timeout: 15_000 }).toMatch(/^Booked: B3, B4\. Charge ch_/)
    expect(errors).toEqual([])

    const other = await (await browser.newContext()).newPage()
    await other.goto(`${edgeUrl}/?event=page-demo`)
    await expect.poll(() => other.locator('button.seat[data-status="sold"]').count(), { timeout: 15_000 }).toBe(2)
    expect(await other.getByRole('button', { name: 'B3', exact: true }).isDisabled()).toBe(true)
  })
})
