// core/lateness.ts: how late a poll is served, from its queue token, and the edge's lateness as the
// median of its polls lately. The edge's and the store's use of it are in test/contract/edge-http/late-edge.ts
// and test/contract/queue-store-lateness.ts.
import { describe, expect, it } from 'vitest'
import {
  LATE_MIN_SAMPLES,
  LATE_SAMPLES,
  LATE_STEP_MS,
  LATE_WINDOW_MS,
  Lateness,
  pollLateness,
  STALL_MIN_MS,
  STALL_TICK_MS,
  Stalls,
  stallMattersMs,
} from '../src/core/lateness.js'
import { nextPollMs } from '../src/core/polling.js'
import { RoomLives } from '../src/rooms/life.js'

const T0 = 1_800_000_000_000
const A = 60_000
const R = 20_000

describe('pollLateness', () => {
  it('is 0 for a poll read when its page was told to send it, and the delay for one read later or earlier', () => {
    const arrival = 1_799_999_000_123_456
    const answeredAt = T0
    const told = answeredAt + nextPollMs(arrival, answeredAt, R)
    const expires = answeredAt + A
    expect(pollLateness(told, arrival, expires, A, R)).toBe(0)
    expect(pollLateness(told + 2500, arrival, expires, A, R)).toBe(2500)
    expect(pollLateness(told - 400, arrival, expires, A, R)).toBe(-400)
  })
})

describe('Lateness', () => {
  it('is the median of the polls lately, in whole steps, and 0 while early polls are the middle', () => {
    const l = new Lateness()
    for (const ms of [3100, 2900, 50, 3300, 60_000, 2600, 3000]) l.note(T0, ms)
    expect(l.current(T0)).toBe(Math.floor(3000 / LATE_STEP_MS) * LATE_STEP_MS)
    const early = new Lateness()
    for (const ms of [-300, -20, 10, 40, 90_000]) early.note(T0, ms)
    expect(early.current(T0)).toBe(0)
  })

  it('says nothing from fewer than LATE_MIN_SAMPLES polls: one visitor back from a break is not a late edge', () => {
    const l = new Lateness()
    for (let i = 0; i < LATE_MIN_SAMPLES - 1; i++) l.note(T0, 40_000)
    expect(l.current(T0)).toBe(0)
    l.note(T0, 40_000)
    expect(l.current(T0 + 200)).toBe(40_000)
  })

  it('counts only polls of the last LATE_WINDOW_MS, and the last LATE_SAMPLES of them', () => {
    const l = new Lateness()
    for (let i = 0; i < 10; i++) l.note(T0, 5000)
    expect(l.current(T0 + LATE_WINDOW_MS)).toBe(5000)
    expect(l.current(T0 + LATE_WINDOW_MS + 150)).toBe(0)
    const full = new Lateness()
    for (let i = 0; i < LATE_SAMPLES; i++) full.note(T0, 8000)
    for (let i = 0; i < LATE_SAMPLES; i++) full.note(T0 + 1, 0)
    expect(full.current(T0 + 1)).toBe(0)
  })

  it('takes the median again at most every 100 ms, not at every poll', () => {
    const l = new Lateness()
    for (let i = 0; i < 9; i++) l.note(T0, 1000)
    expect(l.current(T0)).toBe(1000)
    for (let i = 0; i < 40; i++) l.note(T0 + 50, 4000)
    expect(l.current(T0 + 50)).toBe(1000)
    expect(l.current(T0 + 100)).toBe(4000)
  })
})

describe('Stalls', () => {
  it('notices a stall from the ticks, or from a request before the next tick, as one stall with one id', () => {
    const s = new Stalls()
    expect(s.latest(T0 + 60_000)).toBeUndefined()
    for (let t = T0; t <= T0 + 2000; t += STALL_TICK_MS) s.tick(t)
    expect(s.latest(T0 + 2000 + STALL_TICK_MS - 1)).toBeUndefined()
    // The loop is held up 4 s after the tick at T0 + 2000: a request served then sees it first...
    const begun = T0 + 2000
    expect(s.latest(begun + 4000)).toEqual({ at: begun, ms: 4000 - STALL_TICK_MS })
    // ...the late tick sees the same stall, longer, with the same id.
    s.tick(begun + 4100)
    expect(s.latest(begun + 4100)).toEqual({ at: begun, ms: 4100 - STALL_TICK_MS })
    // Ticks on time after it: no new stall.
    s.tick(begun + 4100 + STALL_TICK_MS)
    expect(s.latest(begun + 4100 + 2 * STALL_TICK_MS)).toEqual({ at: begun, ms: 4100 - STALL_TICK_MS })
  })

  it('takes a busy turn of the loop for no stall, and sees nothing without ticks (the Worker, a test clock)', () => {
    const s = new Stalls()
    s.tick(T0)
    s.tick(T0 + STALL_TICK_MS + STALL_MIN_MS - 1)
    expect(s.latest(T0 + STALL_TICK_MS + STALL_MIN_MS - 1)).toBeUndefined()
    expect(new Stalls().latest(T0 + 3_600_000)).toBeUndefined()
  })

  it('matters to a room when it is half of what abandonAfter leaves after 1.5 refreshes, and a second at least', () => {
    expect(stallMattersMs(6000, 2000)).toBe(1500)
    expect(stallMattersMs(60_000, 20_000)).toBe(15_000)
    expect(stallMattersMs(5000, 2000)).toBe(STALL_MIN_MS)
  })

  it('is told to the store as an outage by the rooms it matters to, once per stall', () => {
    let now = T0
    const lives = new RoomLives(() => now)
    for (; now <= T0 + 1000; now += STALL_TICK_MS) lives.tickStalls()
    expect(lives.hint('a', 1500).outage).toBeUndefined()
    const begun = now - STALL_TICK_MS
    now = begun + 3000
    // A 2.75 s stall: an outage for a room where 1.5 s matters, none for one where 15 s does.
    expect(lives.hint('a', 1500).outage).toBe(begun)
    expect(lives.hint('b', 15_000).outage).toBeUndefined()
    lives.tickStalls()
    now += STALL_TICK_MS
    lives.tickStalls()
    expect(lives.hint('a', 1500).outage).toBe(begun)
  })
})
