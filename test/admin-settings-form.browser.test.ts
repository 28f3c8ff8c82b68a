// The admin UI in a real browser, the settings form: bad values refused next to their field, and the form built from the schema the edge serves, whatever settings it names.
import { describe, expect, it } from 'vitest'
import {
  api,
  base,
  browser,
  DESKTOP,
  done,
  edge,
  type Json,
  MAYA,
  PAGE_WAIT,
  SCHEDULE_KEYS,
  SCHEDULE_LABELS,
  signedIn,
  text,
  useAdminBrowser,
  watch,
} from './support/admin-browser.js'
import { recordCspViolations } from './support/browser.js'

useAdminBrowser()

describe('the admin UI in headless Chromium', () => {
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
})
