// The edge's room directory reloads once a second from start to start, and reads a linked event's
// stock alongside the settings: a slow store does not push the next look at the stock later, which is
// what stops admissions when an event sells out (test/sold-out.test.ts has the sale itself).
import { describe, expect, it } from 'vitest'
import { MemoryClaimGate } from '../src/adapters/memory/claim-gate.js'
import { MemorySettingsStore } from '../src/adapters/memory/settings-store.js'
import { parseRoomSettings } from '../src/core/settings.js'
import type { SettingsStore } from '../src/ports/settings-store.js'
import { RoomDirectory } from '../src/rooms/directory.js'
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

  it('give up on one that never finishes after three periods: the next request starts another, and the lost one writes nothing', async () => {
    const clock = new ManualClock(T0)
    const settings = new MemorySettingsStore()
    const room = parseRoomSettings({ id: 'sale', paths: ['/'], event: 'gig', totalActiveUsers: 5, newUsersPerMinute: 60 })
    // The second settings read takes what the store has then, and answers only when the test says
    // (a Worker request cancelled with its store calls never does).
    let reads = 0
    let releaseLost: (() => void) | undefined
    const hanging: SettingsStore = {
      list: async () => {
        const now = await settings.list()
        if (++reads !== 2) return now
        await new Promise<void>((resolve) => {
          releaseLost = resolve
        })
        return now
      },
      get: (id) => settings.get(id),
      seed: (seeded) => settings.seed(seeded),
      replace: (next, revision) => settings.replace(next, revision),
    }
    let free = 10
    const gate = {
      counts: async () => ({ free, held: 0, sold: 10 - free, reconciledAt: clock.now(), repairs: 0 }),
    }
    const logged: string[] = []
    const rooms = new RoomDirectory(hanging, [room], 1000, () => clock.now(), { gate, log: (event) => logged.push(event) })
    await rooms.start()
    clock.advance(1000)
    rooms.rooms()
    const lost = rooms.pending()
    expect(lost).toBeDefined()
    // Meanwhile the event sells out and an admin pauses the room.
    free = 0
    const stored = (await settings.get('sale')) as { settings: typeof room; rev: number }
    await settings.replace({ ...stored.settings, mode: 'paused' }, stored.rev)
    // Two periods on, the lost reload still counts as running: nothing new begins.
    clock.advance(2000)
    rooms.rooms()
    expect(rooms.pending()).toBe(lost)
    expect(logged).toEqual([])
    // Three periods after it began, the next request starts another, which sees both changes.
    clock.advance(1000)
    rooms.rooms()
    expect(rooms.pending()).not.toBe(lost)
    expect(logged).toEqual(['reload_stuck'])
    await rooms.settled()
    expect(rooms.stock('sale')?.counts?.free).toBe(0)
    expect(rooms.rooms()[0]?.mode).toBe('paused')
    // The lost one answers at last, with the settings of before the pause: they are not taken.
    releaseLost?.()
    await lost
    expect(rooms.rooms()[0]?.mode).toBe('paused')
    expect(rooms.pending()).toBeUndefined()
  })
})
