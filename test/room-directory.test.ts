// The edge's room directory reloads once a second from start to start, and reads a linked event's
// stock alongside the settings: a slow store does not push the next look at the stock later, which is
// what stops admissions when an event sells out (test/sold-out.test.ts has the sale itself).
import { describe, expect, it } from 'vitest'
import { MemoryClaimGate } from '../src/adapters/memory/claim-gate.js'
import { MemorySettingsStore } from '../src/adapters/memory/settings-store.js'
import { parseRoomSettings } from '../src/core/settings.js'
import { RoomDirectory } from '../src/http/room-directory.js'
import type { SettingsStore } from '../src/ports/settings-store.js'
import { ManualClock } from './support/clock.js'

const T0 = 1_800_000_000_000

describe('room directory reloads', () => {
  it('are a second apart from start to start, however long one takes, and look at the stock without waiting for the settings', async () => {
    const clock = new ManualClock(T0)
    const settings = new MemorySettingsStore()
    const room = parseRoomSettings({ id: 'sale', paths: ['/'], event: 'gig', totalActiveUsers: 5, newUsersPerMinute: 60 })
    // Each settings read lasts until the test lets it answer (600 ms of the clock); the gate answers at once.
    let releaseList: (() => void) | undefined
    const slowSettings: SettingsStore = {
      list: async () => {
        await new Promise<void>((resolve) => {
          releaseList = resolve
        })
        return settings.list()
      },
      get: (id) => settings.get(id),
      seed: (seeded) => settings.seed(seeded),
      replace: (next, revision) => settings.replace(next, revision),
    }
    const gate = new MemoryClaimGate(() => clock.now())
    const looks: number[] = []
    const counting = {
      counts: async (event: string, now?: number) => {
        looks.push(clock.now())
        return gate.counts(event, now)
      },
    }
    const rooms = new RoomDirectory(slowSettings, [room], 1000, () => clock.now(), { gate: counting })
    const finishList = async (afterMs: number) => {
      clock.advance(afterMs)
      releaseList?.()
      await rooms.settled()
    }
    // The first reload: the stock is looked at before the settings answer.
    const first = rooms.start()
    await Promise.resolve()
    expect(looks).toEqual([T0])
    clock.advance(600)
    releaseList?.()
    await first
    // 1,000 ms after the first began (not after it ended, at 600 ms), the second begins.
    clock.advance(399)
    rooms.rooms()
    expect(rooms.pending()).toBeUndefined()
    clock.advance(1)
    rooms.rooms()
    expect(rooms.pending()).toBeDefined()
    await Promise.resolve()
    expect(looks).toEqual([T0, T0 + 1000])
    await finishList(600)
    clock.advance(400)
    rooms.rooms()
    await Promise.resolve()
    expect(looks).toEqual([T0, T0 + 1000, T0 + 2000])
    await finishList(0)
  })
})
