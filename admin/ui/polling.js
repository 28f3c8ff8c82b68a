// Anteroom admin UI: the refresh loop. The room's stats every 2 s (and its history every 10 s of the
// edge's clock); the rooms and the audit log every fifth time. A newer revision of the open room
// reloads the form, or, with edits in it, says someone else changed it.

import { renderAudit } from './audit.js'
import { $, announce, api, enc, markOffline, revOf, state, WINDOW_MS } from './common.js'
import { renderChart, renderStats, renderStoreDown } from './live.js'
import { renderRoomList } from './rooms.js'
import { dirtyFields, loadSettings } from './settings.js'

const STATS_MS = 2000
/** Rooms and the audit log refresh every this many stats polls. */
const SLOW_EVERY = 5

export function startLoop() {
  const id = ++state.loop
  const run = async () => {
    if (id !== state.loop) return
    state.ticks++
    try {
      const jobs = [refreshStats()]
      if (state.ticks % SLOW_EVERY === 0) jobs.push(refreshRooms(), refreshAudit())
      await Promise.all(jobs)
    } catch {
      markOffline()
    }
    if (id === state.loop) setTimeout(run, STATS_MS)
  }
  setTimeout(run, STATS_MS)
}

export async function refreshRooms() {
  const r = await api('GET', '/rooms')
  if (!r.ok) return
  state.rooms = r.data.rooms
  renderRoomList()
  const mine = state.rooms.find((x) => x.settings.id === state.roomId)
  if (mine && state.loaded && revOf(mine.etag) > revOf(state.etag) && !state.saving && state.conflict === null) {
    if (dirtyFields().length === 0) {
      loadSettings(mine.settings, mine.etag)
      announce(`Someone else changed the settings of ${state.roomId}; the form now shows them.`)
    } else {
      $('stale-text').textContent = 'Someone else has changed these settings since you loaded them.'
      $('stale').hidden = false
    }
  }
}

export async function refreshStats() {
  const room = state.roomId
  if (room === null) return
  const r = await api('GET', `/rooms/${enc(room)}/stats`)
  if (room !== state.roomId) return
  if (r.status === 503 && r.data?.store === 'down') {
    renderStoreDown(r.data)
    return
  }
  if (!r.ok) return
  state.stats = r.data
  renderStats()
  pushLive(r.data)
  const bucket = Math.floor(r.data.at / 10_000)
  if (bucket !== state.historyBucket) await refreshHistory(bucket)
  renderChart()
}

async function refreshHistory(bucket) {
  const room = state.roomId
  const r = await api('GET', `/rooms/${enc(room)}/history`)
  if (!r.ok || room !== state.roomId) return
  state.samples = r.data.samples
  state.historyBucket = bucket
  const last = state.samples.at(-1)?.t ?? Number.NEGATIVE_INFINITY
  state.live = state.live.filter((p) => p.t > last)
}

export async function refreshAudit() {
  const r = await api('GET', '/audit?limit=20')
  if (!r.ok) return
  state.audit = r.data.entries
  renderAudit()
  renderChart()
}

function pushLive(s) {
  const point = { t: s.at, waiting: s.waiting, active: s.active, admittedLastMinute: s.admittedLastMinute }
  const last = state.live.at(-1)
  if (last && last.t === point.t) state.live[state.live.length - 1] = point
  else if (!last || point.t > last.t) state.live.push(point)
  state.live = state.live.filter((p) => p.t >= point.t - WINDOW_MS)
}
