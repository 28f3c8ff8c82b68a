// The queue page is its room's frame (made once per room text, state and place) around the visitor's
// own numbers (src/http/pages.ts): every page must still be the visitor's own, of its room and of the
// room's current settings.
import { describe, expect, it } from 'vitest'
import type { VisitorState, VisitorStatus } from '../src/core/visit.js'
import { grouped, queuePage } from '../src/http/pages.js'

const STATES: VisitorState[] = ['queued', 'paused', 'closed', 'busy', 'ended', 'recovering', 'sold_out', 'all_held']

function status(room: string, state: VisitorState, position: number | null, refreshSeconds = 20): VisitorStatus {
  return {
    room,
    state,
    position,
    ahead: position === null ? null : position - 1,
    waiting: position === null ? null : position + 500,
    etaSeconds: position === null ? null : position * 7,
    etaRange: position === null ? null : [position * 5, position * 9],
    refreshSeconds,
    nextPollSeconds: position === null ? refreshSeconds : 3.25 + position / 1000,
  }
}

describe('queue page', () => {
  it("each visitor's page has their own numbers, in every state, with and without a place", () => {
    const text = { title: 'The big sale', message: 'Thanks for waiting.' }
    for (const state of STATES)
      for (const [a, b] of [
        [1234, 987_654],
        [null, null],
      ] as const) {
        const first = queuePage(status('sale', state, a), text)
        const second = queuePage(status('sale', state, b), text)
        for (const [page, mine, other] of [
          [first, a, b],
          [second, b, a],
        ] as const) {
          expect(page).toContain(`data-state="${state}"`)
          expect(page).toContain('data-room="sale"')
          if (mine !== null) {
            expect(page).toContain(`<p class="big" id="position">${grouped(mine)}</p>`)
            expect(page).toContain(`data-next="${3.25 + mine / 1000}"`)
          } else expect(page).not.toContain('id="position"')
          if (other !== null) expect(page).not.toContain(grouped(other))
          if (state === 'sold_out')
            expect(page).toContain(
              mine === null ? 'This page checks by itself in case any come back.' : 'You keep your place in line in case any come back.',
            )
          expect(page.startsWith('<!doctype html>')).toBe(true)
          expect(page.endsWith('</html>')).toBe(true)
        }
      }
  })

  it("follows the room's settings: new words, another refresh, another room with the same words", () => {
    const before = { title: 'Before the change', message: 'Old words.' }
    const after = { title: 'After the change', message: 'New words.' }
    const page1 = queuePage(status('sale', 'queued', 5), before)
    expect(page1).toContain('<h1 id="headline">Before the change</h1>')
    const page2 = queuePage(status('sale', 'queued', 5), after)
    expect(page2).toContain('<h1 id="headline">After the change</h1>')
    expect(page2).toContain('<p>New words.</p>')
    expect(page2).not.toContain('Before the change')
    const slower = queuePage(status('sale', 'queued', 5, 45), after)
    expect(slower).toContain('data-refresh="45"')
    expect(slower).toContain('every 45 seconds')
    expect(slower).not.toContain('every 20 seconds')
    const other = queuePage(status('other', 'queued', 5, 45), after)
    expect(other).toContain('data-room="other"')
    expect(other).not.toContain('data-room="sale"')
  })
})
