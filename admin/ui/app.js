// Anteroom admin UI: plain modern JavaScript, no framework, no build step, no dependencies.
// Served under a CSP of script-src 'self' and style-src 'self': no inline scripts or style
// attributes; styles come from style.css classes (and CSSOM properties, which the CSP allows).
// Sign-in holds an HttpOnly session cookie; every change sends the CSRF token from /api/session.

import { createAccessView, describeAccess } from './access.js'
import { createBypassView, describeBypass } from './bypass.js'
import { createPageView, describePage } from './page.js'
import { createReportView } from './report.js'

const BASE = '/_anteroom'
const API = `${BASE}/api`
const STATS_MS = 2000
/** Rooms and the audit log refresh every this many stats polls. */
const SLOW_EVERY = 5
const WINDOW_MS = 30 * 60_000
/** A gap this long between points breaks the line instead of drawing across it. */
const GAP_MS = 45_000
const SVG_NS = 'http://www.w3.org/2000/svg'

/**
 * The room settings' schema, from the edge (GET /api/settings-schema, made from src/core/settings.ts):
 * the settings form, its labels, ranges and help, and how each value is read and shown come from it.
 */
const schema = { groups: [], settings: [], byName: {} }
/** The names of the settings in the form, in its order. */
let FIELDS = []
/** How messages, conflicts and the audit log name a setting: its label, with its unit. */
const LABELS = {}
const MODE_NAMES = { fifo: 'Open line', paused: 'Paused', passthrough: 'Pass-through', closed: 'Closed' }
const SERIES = [
  { key: 'waiting', label: 'Waiting', cls: 'waiting' },
  { key: 'active', label: 'Active', cls: 'active' },
  { key: 'admittedLastMinute', label: 'Admitted / min', cls: 'admitted' },
]

const state = {
  who: null,
  csrf: null,
  rooms: [],
  roomId: null,
  /** The settings the form was loaded from, and their ETag: the base of every save. */
  loaded: null,
  etag: null,
  saving: false,
  conflict: null,
  samples: [],
  live: [],
  historyBucket: null,
  stats: null,
  audit: [],
  loop: 0,
  ticks: 0,
  /** The room's view: 'live' (numbers, chart, settings) or 'report' (report.js). */
  view: 'live',
}

// --- small helpers ----------------------------------------------------------------------------

const $ = (id) => document.getElementById(id)
const fieldInput = (name) => $(`f-${name}`)
const fmt = (n) => (typeof n === 'number' && Number.isFinite(n) ? n.toLocaleString('en-US') : '–')
const enc = encodeURIComponent
const revOf = (etag) => Number(/^"rev-(\d+)"$/.exec(etag ?? '')?.[1] ?? 0)

/** Builds an element: h('td', { class: 'x' }, 'text', child). Text goes in as text, never as HTML. */
function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag)
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue
    if (k === 'class') el.className = v
    else el.setAttribute(k, v === true ? '' : String(v))
  }
  for (const c of children) if (c !== null && c !== undefined) el.append(c instanceof Node ? c : String(c))
  return el
}

function svg(tag, attrs = {}, text) {
  const el = document.createElementNS(SVG_NS, tag)
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v))
  if (text !== undefined) el.textContent = text
  return el
}

function clockTime(ms, seconds = false) {
  return new Date(ms).toLocaleTimeString('en-GB', { hour: '2-digit', minute: '2-digit', second: seconds ? '2-digit' : undefined })
}

function duration(seconds) {
  if (seconds === null || seconds === undefined) return 'unknown'
  if (seconds === 0) return 'none'
  if (seconds < 60) return '< 1 min'
  const min = Math.round(seconds / 60)
  if (min < 60) return `${min} min`
  return `${Math.floor(min / 60)} h ${min % 60} min`
}

function valueText(field, v) {
  if (schema.byName[field]?.type === 'schedule') return scheduleText(v)
  if (schema.byName[field]?.type === 'ref' && (v === undefined || v === null)) return 'none'
  if (v === undefined || v === null) return ''
  if (Array.isArray(v)) return v.length ? v.join(', ') : '(any)'
  if (field === 'mode') return MODE_NAMES[v] ?? v
  const choice = schema.byName[field]?.choices?.[v]
  if (choice) return choice.label
  if (typeof v === 'number') return fmt(v)
  return v.length > 60 ? `${v.slice(0, 57)}…` : v
}

/** A value with an object's keys in order, and null for no value: what `same` compares. */
const canonical = (v) =>
  v === undefined || v === null
    ? null
    : typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(
          Object.keys(v)
            .sort()
            .map((k) => [k, v[k]]),
        )
      : v

/** Compares values, lists and schedules by value; no value (undefined) is the same as null. */
const same = (a, b) =>
  a === b ||
  ((a === undefined || a === null || typeof a === 'object' || typeof b === 'object') &&
    JSON.stringify(canonical(a)) === JSON.stringify(canonical(b)))

/** Calls the admin API; a 401 while signed in means the session ended. */
async function api(method, path, body, headers = {}) {
  const init = { method, headers: { accept: 'application/json', ...headers }, credentials: 'same-origin', cache: 'no-store' }
  if (method !== 'GET') init.headers['x-csrf-token'] = state.csrf ?? ''
  if (body !== undefined) {
    init.headers['content-type'] = 'application/json'
    init.body = JSON.stringify(body)
  }
  const res = await fetch(`${API}${path}`, init)
  let data = null
  try {
    data = await res.json()
  } catch {
    data = null
  }
  if (res.status === 401 && state.who !== null) signedOut('Your session has ended. Sign in again.')
  return { status: res.status, ok: res.ok, data }
}

/** Runs a background refresh; if the edge does not answer, the Store tile says so. */
const background = (promise) => {
  promise.catch(markOffline)
}

const errorMessage = (r, fallback) => r.data?.error?.message ?? `${fallback} (HTTP ${r.status})`

function announce(text, kind = 'info') {
  const el = $('announce')
  el.textContent = text
  el.className = `announce ${kind}`
}

function saveStatus(text, kind = 'info') {
  const el = $('save-status')
  el.textContent = text
  el.className = `save-status ${kind}`
}

// --- sign-in ----------------------------------------------------------------------------------

function showSignin(message = '') {
  $('loading').hidden = true
  $('app').hidden = true
  $('signin').hidden = false
  const err = $('signin-error')
  err.textContent = message
  err.classList.toggle('info', message !== '' && !message.startsWith('That'))
  $('token').focus()
}

/** While the edge refuses sign-ins (429), the button stays disabled until this time (ms). */
let signinLockedUntil = 0
let signinUnlockTimer = null

function lockSignin(seconds) {
  signinLockedUntil = Date.now() + seconds * 1000
  $('signin-button').disabled = true
  clearTimeout(signinUnlockTimer)
  signinUnlockTimer = setTimeout(() => {
    signinLockedUntil = 0
    $('signin-button').disabled = false
    const err = $('signin-error')
    err.textContent = 'You can try signing in again.'
    err.classList.add('info')
  }, seconds * 1000)
}

async function signIn(event) {
  event.preventDefault()
  if (Date.now() < signinLockedUntil) return
  const input = $('token')
  const token = input.value.trim()
  const name = $('signin-name').value.trim()
  const err = $('signin-error')
  err.classList.remove('info')
  if (token === '') {
    err.textContent = 'Enter your admin token.'
    input.setAttribute('aria-invalid', 'true')
    input.focus()
    return
  }
  $('signin-button').disabled = true
  try {
    const res = await fetch(`${BASE}/admin/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify(name === '' ? { token } : { name, token }),
      credentials: 'same-origin',
    })
    const data = await res.json().catch(() => null)
    if (!res.ok) {
      if (res.status === 429) {
        // Too many failed sign-ins from here (or for this name): the edge says how long to wait.
        const seconds = Number(res.headers.get('retry-after')) || data?.error?.retryAfterSeconds || 1
        err.textContent = errorMessage({ data, status: res.status }, `Too many failed sign-ins: try again in ${seconds} s`)
        lockSignin(seconds)
      } else if (res.status === 401) {
        err.textContent =
          name === ''
            ? 'That admin token is not valid. Check it and try again.'
            : 'That name and admin token do not match. Check them and try again.'
      } else {
        err.textContent = errorMessage({ data, status: res.status }, 'Sign-in failed')
      }
      input.setAttribute('aria-invalid', 'true')
      input.select()
      return
    }
    input.value = ''
    input.removeAttribute('aria-invalid')
    err.textContent = ''
    await signedIn(data)
  } catch {
    err.textContent = 'The edge did not answer. Check your connection and try again.'
  } finally {
    if (Date.now() >= signinLockedUntil) $('signin-button').disabled = false
  }
}

async function signedIn(session) {
  state.who = session.who
  state.csrf = session.csrf
  $('who').textContent = session.who
  $('loading').hidden = true
  $('signin').hidden = true
  $('app').hidden = false
  await loadSchema()
  await refreshRooms()
  let wanted = ''
  try {
    wanted = decodeURIComponent(location.hash.replace(/^#room=/, ''))
  } catch {
    wanted = ''
  }
  const first = state.rooms.find((r) => r.settings.id === wanted) ?? state.rooms[0]
  if (first) await selectRoom(first.settings.id)
  else $('empty').hidden = false
  background(refreshAudit())
  startLoop()
}

function signedOut(message) {
  state.loop++
  state.who = null
  state.csrf = null
  state.roomId = null
  state.loaded = null
  showSignin(message)
}

async function signOut() {
  const res = await api('POST', '/logout').catch(() => ({ status: 0 }))
  signedOut(
    res.status === 200
      ? 'You are signed out.'
      : 'Signed out in this browser. The edge could not end the session everywhere; it ends by itself within 8 hours.',
  )
}

// --- polling ----------------------------------------------------------------------------------

function startLoop() {
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

function markOffline() {
  $('stat-store').textContent = 'No answer'
  $('stat-store').className = 'stat-value down'
  $('note-store').textContent = 'the edge did not answer'
}

async function refreshRooms() {
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

async function refreshStats() {
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

async function refreshAudit() {
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

// --- rooms ------------------------------------------------------------------------------------

function where(settings) {
  const hosts = settings.hosts.length ? settings.hosts.join(', ') : 'any host'
  const paths = settings.paths.length ? settings.paths.join(', ') : 'every path'
  return `${hosts} · ${paths}`
}

function renderRoomList() {
  const list = $('room-list')
  list.replaceChildren(
    ...state.rooms.map(({ settings }) => {
      const mode = settings.id === state.roomId && state.stats ? state.stats.mode : settings.mode
      const button = h(
        'button',
        {
          type: 'button',
          class: 'room-button',
          'data-room': settings.id,
          'aria-current': settings.id === state.roomId ? 'true' : undefined,
        },
        h('span', { class: 'room-button-name' }, settings.id),
        h('span', { class: `badge mode-${mode}` }, MODE_NAMES[mode] ?? mode),
        h('span', { class: 'room-button-where' }, where(settings)),
      )
      button.addEventListener('click', () => background(switchRoom(settings.id)))
      return h('li', {}, button)
    }),
  )
}

async function switchRoom(id) {
  if (id === state.roomId) return
  if (dirtyFields().length > 0) {
    const ok = await confirmDialog({
      title: 'Discard your edits?',
      text: `The settings of ${state.roomId} have edits that are not saved.`,
      ok: 'Discard edits',
    })
    if (!ok) return
  }
  await selectRoom(id)
}

async function selectRoom(id) {
  state.roomId = id
  state.samples = []
  state.live = []
  state.historyBucket = null
  state.stats = null
  history.replaceState(null, '', `#room=${enc(id)}`)
  $('room').hidden = false
  $('room-name').textContent = id
  for (const k of ['waiting', 'active', 'admitted', 'eta', 'abandoned', 'store']) $(`stat-${k}`).textContent = '–'
  renderDefence(null)
  announce('')
  saveStatus('')
  hideConflict()
  renderRoomList()
  const r = await api('GET', `/rooms/${enc(id)}`)
  if (r.ok && state.roomId === id) loadSettings(r.data.settings, r.data.etag)
  await refreshStats()
  if (state.view === 'report' && state.roomId === id) report.show(id)
  if (state.view === 'access' && state.roomId === id) access.show(id)
  if (state.view === 'bypass' && state.roomId === id) bypass.show(id)
  if (state.view === 'page' && state.roomId === id) pageView.show(id)
}

// --- views: live, or the report -----------------------------------------------------------------

/** The report view (report.js), drawn with this page's helpers; its range ends at the server's time. */
const report = createReportView({ api, h, svg, fmt, clockTime, niceMax, serverNow: () => state.stats?.at ?? Date.now() })
/** The access view (access.js): a room's codes and invite links; a change shows in the audit log. */
const access = createAccessView({
  api,
  h,
  fmt,
  confirmDialog,
  serverNow: () => state.stats?.at ?? Date.now(),
  changed: () => background(Promise.all([refreshAudit(), refreshRooms()])),
})

/** The Bypass & checks view (bypass.js): a room's bypass rules and human check; a change shows in the audit log. */
const bypass = createBypassView({ api, h, fmt, confirmDialog, changed: () => background(ownChange()) })

/** A change this page made in another view (a rule, the human check): the form takes it as its own, not as someone else's. */
async function ownChange() {
  const room = state.roomId
  const r = await api('GET', `/rooms/${enc(room)}`)
  if (r.ok && room === state.roomId && !state.saving && state.conflict === null && dirtyFields().length === 0)
    loadSettings(r.data.settings, r.data.etag)
  await Promise.all([refreshAudit(), refreshRooms()])
}

/**
 * The Page view (page.js): the room's language and template, the templates, their editor and previews.
 * A change of the room's settings there is this admin's own: the settings form takes it as it is.
 */
const pageView = createPageView({
  api,
  h,
  confirmDialog,
  changed: (room) => {
    if (room !== undefined && room.settings.id === state.roomId && dirtyFields().length === 0) loadSettings(room.settings, room.etag)
    background(Promise.all([refreshAudit(), refreshRooms()]))
  },
})

function showView(name) {
  state.view = name
  $('view-live').setAttribute('aria-selected', String(name === 'live'))
  $('view-report').setAttribute('aria-selected', String(name === 'report'))
  $('view-access').setAttribute('aria-selected', String(name === 'access'))
  $('view-bypass').setAttribute('aria-selected', String(name === 'bypass'))
  $('view-page').setAttribute('aria-selected', String(name === 'page'))
  for (const part of document.querySelectorAll('#room > .stats, #room > .grid')) part.hidden = name !== 'live'
  if (name === 'access') access.show(state.roomId)
  else access.hide()
  if (name === 'bypass') bypass.show(state.roomId)
  else bypass.hide()
  if (name === 'page') pageView.show(state.roomId)
  else pageView.hide()
  if (name === 'report') report.show(state.roomId)
  else {
    report.hide()
    if (name === 'live') renderChart()
  }
}

// --- live numbers and chart -------------------------------------------------------------------

function renderModeBadge(mode) {
  const badge = $('mode-badge')
  badge.textContent = MODE_NAMES[mode] ?? mode
  badge.className = `badge mode-${mode}`
  $('pause').disabled = mode === 'paused'
  $('resume').disabled = mode === 'fifo'
  $('close').disabled = mode === 'closed'
}

function renderStats() {
  const s = state.stats
  $('stat-waiting').textContent = fmt(s.waiting)
  $('stat-active').textContent = fmt(s.active)
  $('stat-admitted').textContent = fmt(s.admittedLastMinute)
  $('stat-eta').textContent = s.waiting > 0 && s.etaBackOfLineSeconds === null ? 'unknown' : duration(s.etaBackOfLineSeconds)
  $('stat-abandoned').textContent = fmt(s.abandonedLastMinute)
  renderDefence(s.botDefence)
  renderStock(s.stock)
  renderSchedules()
  $('stat-store').textContent = 'Up'
  $('stat-store').className = 'stat-value up'
  $('note-store').textContent = `as of ${clockTime(s.at, true)}`
  const limit = state.loaded
  $('note-admitted').textContent = limit ? `limit ${fmt(limit.newUsersPerMinute)} / min` : 'last 60 seconds'
  $('note-active').textContent = limit ? `of at most ${fmt(limit.totalActiveUsers)}` : 'sessions on the site'
  renderModeBadge(s.mode)
  const item = document.querySelector(`.room-button[aria-current="true"] .badge`)
  if (item) {
    item.textContent = MODE_NAMES[s.mode] ?? s.mode
    item.className = `badge mode-${s.mode}`
  }
}

/** The bot defence panel: proof of work ("off" at 0, or where the edge has no such setting), the network cap, refusals by reason. */
function renderDefence(d) {
  const show = (id, text, off = false) => {
    $(id).textContent = text
    $(id).className = off ? 'off' : ''
  }
  if (!d) {
    for (const id of ['def-pow', 'def-cap', 'def-refused-network', 'def-refused-pow']) show(id, '–', true)
    return
  }
  const pow = d.powDifficulty ?? 0
  show('def-pow', pow > 0 ? `difficulty ${fmt(pow)}` : 'off', pow === 0)
  const cap = d.joinsPerNetworkPerMinute ?? 0
  show('def-cap', cap > 0 ? `${fmt(cap)} / min (IPv4 /${d.networkPrefixIPv4}, IPv6 /${d.networkPrefixIPv6})` : 'off', cap === 0)
  for (const reason of ['network', 'pow']) {
    const total = d.refused?.total?.[reason] ?? 0
    const recent = d.refused?.lastMinute?.[reason] ?? 0
    show(`def-refused-${reason}`, `${fmt(total)} (${fmt(recent)} last min)`)
  }
}

const STOCK_STATES = {
  available: ['Available', 'Something is free: the line moves as usual.'],
  all_held: [
    'Everything is held',
    'Nothing is free, some is held: nobody new is let in until a hold runs out or is released. The line keeps its places; newcomers still join it.',
  ],
  sold_out: [
    'Sold out',
    'Everything is sold: nobody new is let in. The line keeps its places; newcomers get the sold-out page without one.',
  ],
  unknown: ['Counts unknown', 'The origin has published no stock for this event (or the store did not answer): the line moves as usual.'],
}

/** The linked event's stock, as the edge saw it at its last look (once a second); null: not linked. */
function renderStock(stock) {
  const badge = $('stock-badge')
  const line = $('stock-state')
  const stops = stock?.stopsAdmissions === true
  badge.hidden = !stops
  if (stops) {
    badge.textContent = STOCK_STATES[stock.state]?.[0] ?? stock.state
    badge.className = `badge stock-${stock.state}`
  }
  if (stock === null || stock === undefined) {
    $('stock-event').textContent = 'no event'
    line.textContent = 'Not linked to an event: set Event in the settings to stop admissions when it has sold out.'
    line.setAttribute('data-state', 'none')
    $('stock-counts').hidden = true
    return
  }
  const [title, text] = STOCK_STATES[stock.state] ?? [stock.state, '']
  $('stock-event').textContent = `event ${stock.event}${stock.seenAt ? `, looked at ${clockTime(stock.seenAt, true)}` : ''}`
  line.replaceChildren(h('strong', {}, `${title}.`), ` ${text}`)
  line.setAttribute('data-state', stock.state)
  $('stock-counts').hidden = stock.free === null
  $('stock-free').textContent = fmt(stock.free)
  $('stock-held').textContent = fmt(stock.held)
  $('stock-sold').textContent = fmt(stock.sold)
  $('stock-reconciled').textContent = stock.reconciledAt ? clockTime(stock.reconciledAt, true) : '–'
}

function renderStoreDown(body) {
  $('stat-store').textContent = 'Down'
  $('stat-store').className = 'stat-value down'
  $('note-store').textContent = 'numbers are stale'
  renderModeBadge(body.mode)
  renderStock(body.stock)
}

/** 0, then a round number at or above the largest value: 1, 2, 2.5 or 5 times a power of ten. */
function niceMax(v) {
  if (v <= 4) return 4
  const p = 10 ** Math.floor(Math.log10(v))
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p
  return 10 * p
}

function auditMarker(entry) {
  const a = entry.after ?? {}
  const b = entry.before ?? {}
  switch (entry.action) {
    case 'room.pause':
      return 'paused'
    case 'room.resume':
      return 'resumed'
    case 'room.close':
      return 'closed'
    case 'sessions.end-all':
      return 'ended all'
    case 'settings.update':
      if (a.newUsersPerMinute !== b.newUsersPerMinute) return `${fmt(a.newUsersPerMinute)}/min`
      if (a.totalActiveUsers !== b.totalActiveUsers) return `max ${fmt(a.totalActiveUsers)}`
      if (a.mode !== b.mode) return MODE_NAMES[a.mode] ?? a.mode
      if (!same(a.schedule, b.schedule)) return a.schedule ? 'schedule' : 'no schedule'
      return 'settings'
    default:
      return null
  }
}

function renderChart() {
  const box = $('chart-box')
  const chart = $('chart')
  const width = Math.max(240, Math.floor(box.clientWidth))
  const height = Math.max(180, Math.floor(box.clientHeight))
  const last = state.samples.at(-1)?.t ?? Number.NEGATIVE_INFINITY
  const points = [...state.samples, ...state.live.filter((p) => p.t > last)]
  const end = Math.max(points.at(-1)?.t ?? 0, state.stats?.at ?? 0)
  chart.setAttribute('viewBox', `0 0 ${width} ${height}`)
  chart.setAttribute('width', String(width))
  chart.setAttribute('height', String(height))
  const desc = svg('desc', { id: 'chart-desc' })
  const nodes = [desc]
  if (end === 0) {
    desc.textContent = 'No data yet'
    nodes.push(
      svg('text', { x: width / 2, y: height / 2, class: 'chart-empty', 'text-anchor': 'middle' }, 'Waiting for the first numbers…'),
    )
    chart.replaceChildren(...nodes)
    return
  }
  const start = end - WINDOW_MS
  const shown = points.filter((p) => p.t >= start)
  const m = { l: 52, r: 14, t: 22, b: 24 }
  const gap = 24
  const plotW = width - m.l - m.r
  const panelH = (height - m.t - m.b - gap * (SERIES.length - 1)) / SERIES.length
  const x = (t) => m.l + ((t - start) / WINDOW_MS) * plotW

  // Time grid, every 5 minutes of the server's clock.
  for (let t = Math.ceil(start / 300_000) * 300_000; t <= end; t += 300_000) {
    nodes.push(svg('line', { x1: x(t), x2: x(t), y1: m.t, y2: height - m.b, class: 'grid-v' }))
    nodes.push(svg('text', { x: x(t), y: height - 6, class: 'axis', 'text-anchor': 'middle' }, clockTime(t)))
  }

  const summary = []
  SERIES.forEach((series, i) => {
    const top = m.t + i * (panelH + gap)
    const bottom = top + panelH
    const values = shown.map((p) => p[series.key]).filter((v) => typeof v === 'number')
    const max = niceMax(Math.max(0, ...values))
    const y = (v) => bottom - (v / max) * panelH
    nodes.push(svg('line', { x1: m.l, x2: width - m.r, y1: bottom, y2: bottom, class: 'grid-base' }))
    nodes.push(svg('line', { x1: m.l, x2: width - m.r, y1: top, y2: top, class: 'grid-h' }))
    nodes.push(svg('line', { x1: m.l, x2: width - m.r, y1: (top + bottom) / 2, y2: (top + bottom) / 2, class: 'grid-h' }))
    nodes.push(svg('text', { x: m.l - 6, y: top + 4, class: 'axis', 'text-anchor': 'end' }, fmt(max)))
    nodes.push(svg('text', { x: m.l - 6, y: bottom, class: 'axis', 'text-anchor': 'end' }, '0'))
    // Lines, broken where there is no data for a while; a light area under each stretch.
    let line = ''
    let area = ''
    let run = []
    const flush = () => {
      if (run.length === 0) return
      const d = run.map((p, k) => `${k === 0 ? 'M' : 'L'}${x(p.t).toFixed(1)} ${y(p[series.key]).toFixed(1)}`).join(' ')
      line += `${d} `
      area += `${d} L${x(run.at(-1).t).toFixed(1)} ${bottom} L${x(run[0].t).toFixed(1)} ${bottom} Z `
      run = []
    }
    let prev = null
    for (const p of shown) {
      if (typeof p[series.key] !== 'number') continue
      if (prev && p.t - prev.t > GAP_MS) flush()
      run.push(p)
      prev = p
    }
    flush()
    nodes.push(svg('path', { d: area.trim() || 'M0 0', class: `area s-${series.cls}` }))
    nodes.push(
      svg('path', { d: line.trim() || 'M0 0', class: `line s-${series.cls}`, 'data-series': series.key, 'data-points': values.length }),
    )
    const lastPoint = shown.filter((p) => typeof p[series.key] === 'number').at(-1)
    if (lastPoint) {
      nodes.push(svg('circle', { cx: x(lastPoint.t), cy: y(lastPoint[series.key]), r: 3.5, class: `dot s-${series.cls}` }))
      summary.push(`${series.label} ${fmt(lastPoint[series.key])} (peak ${fmt(Math.max(...values))})`)
    }
    nodes.push(svg('text', { x: m.l + 6, y: top + 13, class: `panel-label t-${series.cls}` }, series.label))
  })

  // Admin changes to this room, as dashed markers. Changes close together share one label, the
  // newest, with a count of the others.
  const groups = []
  for (const entry of [...state.audit].reverse()) {
    const t = Date.parse(entry.at)
    if (entry.room !== state.roomId || !(t >= start && t <= end)) continue
    const label = auditMarker(entry)
    if (label === null) continue
    const mx = x(t)
    nodes.push(svg('line', { x1: mx, x2: mx, y1: m.t - 4, y2: height - m.b, class: 'marker' }))
    const group = groups.at(-1)
    if (group && mx - group.x < 40) {
      group.x = mx
      group.label = label
      group.count++
    } else groups.push({ x: mx, label, count: 1 })
  }
  // Labels from the newest back: right of their line if there is room, else left; never overlapping.
  let limit = width - m.r
  for (const g of groups.reverse()) {
    const text = g.count > 1 ? `${g.label} +${g.count - 1}` : g.label
    const w = text.length * 6.5
    let left = g.x + 4
    if (left + w > limit) left = g.x - 4 - w
    if (left < 0 || left + w > limit) continue
    nodes.push(svg('text', { x: left, y: m.t - 8, class: 'marker-label' }, text))
    limit = left - 8
  }

  desc.textContent = `Last 30 minutes, ${shown.length} points. Now: ${summary.join('; ')}.`
  chart.replaceChildren(...nodes)
}

// --- scheduled sales --------------------------------------------------------------------------

/** A schedule setting's three times, each a box of the form. */
const SCHEDULE_PARTS = [
  { key: 'prequeueAt', label: 'Pre-queue opens', example: '2026-12-01T09:30:00+01:00' },
  { key: 'opensAt', label: 'Sale opens', example: '2026-12-01T10:00:00+01:00' },
  { key: 'closesAt', label: 'Sale closes (optional)', example: '2026-12-01T22:00:00+01:00' },
]
/** As the edge checks a time (src/core/settings.ts): date, time, optional seconds and fraction, a zone. */
const ISO_TIME = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2})(:\d{2}(?:\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2})$/
const LOCAL_ZONE = Intl.DateTimeFormat().resolvedOptions().timeZone
const PHASES = {
  scheduled: 'scheduled: nobody gets a place yet',
  prequeue: 'pre-queue: arrivals join the draw, nobody is let in',
  open: 'open: the line moves',
  over: 'over: the sale has closed',
}

const isSchedule = (f) => schema.byName[f]?.type === 'schedule'
const partInput = (f, key) => $(`f-${f}-${key}`)
/** A field's inputs: one, or a schedule's three. */
const controls = (f) => (isSchedule(f) ? SCHEDULE_PARTS.map((p) => partInput(f, p.key)) : [fieldInput(f)])

/** A schedule in one line, its times as written: for messages, conflicts and the audit log. */
function scheduleText(v) {
  if (v === undefined || v === null) return 'none'
  const parts = [`pre-queue ${v.prequeueAt}`, `opens ${v.opensAt}`]
  if (v.closesAt) parts.push(`closes ${v.closesAt}`)
  return parts.join(', ')
}

/** The instant (ms) of a time with a zone, or null. */
function isoMs(text) {
  if (!ISO_TIME.test(text)) return null
  const ms = Date.parse(text)
  return Number.isNaN(ms) ? null : ms
}

/** An instant's date and time of day in a zone (the browser's when none is given). */
function wallTime(ms, timeZone) {
  const f = new Intl.DateTimeFormat('en-GB', {
    timeZone,
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
    hourCycle: 'h23',
  })
  const p = Object.fromEntries(f.formatToParts(new Date(ms)).map((x) => [x.type, x.value]))
  return { date: `${p.year}-${p.month}-${p.day}`, time: `${p.hour}:${p.minute}${p.second === '00' ? '' : `:${p.second}`}` }
}

/** A time as written with its zone, then in UTC and the browser's zone: "10:00 on 2026-12-01, UTC+01:00 — 09:00 UTC; your time (…) 10:00". */
function zoneText(text) {
  const m = ISO_TIME.exec(text)
  const ms = isoMs(text)
  if (m === null || ms === null) return null
  const zone = m[4] === 'Z' ? 'UTC' : `UTC${m[4]}`
  const at = (w) => (w.date === m[1] ? w.time : `${w.time} on ${w.date}`)
  const written = `${m[2]}${m[3] && m[3] !== ':00' ? m[3] : ''} on ${m[1]}, ${zone}`
  return `${written} — ${at(wallTime(ms, 'UTC'))} UTC; your time (${LOCAL_ZONE}) ${at(wallTime(ms))}`
}

/** Where a schedule is at `now`, as the edge works it out (schedulePhase in src/core/settings.ts). */
function phaseOf(s, now) {
  if (s === null || s === undefined) return 'open'
  if (now < Date.parse(s.prequeueAt)) return 'scheduled'
  if (now < Date.parse(s.opensAt)) return 'prequeue'
  if (s.closesAt && now >= Date.parse(s.closesAt)) return 'over'
  return 'open'
}

/** Under each box: the time it holds, in its zone, UTC and the browser's zone. */
function renderZones(f) {
  const texts = SCHEDULE_PARTS.map((p) => partInput(f, p.key).value.trim())
  const empty = texts.every((t) => t === '')
  SCHEDULE_PARTS.forEach((p, i) => {
    const t = texts[i]
    $(`t-${f}-${p.key}`).textContent =
      t === ''
        ? p.key === 'closesAt'
          ? 'Optional: without it the sale stays open.'
          : empty
            ? 'Empty: no schedule.'
            : 'Needed for a schedule.'
        : (zoneText(t) ?? `Not a time with a zone: write it like ${p.example}.`)
  })
}

/** The live schedule's phase, on the edge's clock (from the stats) once known. */
function renderPhase(f) {
  const el = $(`p-${f}`)
  const live = state.loaded?.[f] ?? null
  if (live === null) {
    el.textContent = 'Live: no schedule.'
    el.removeAttribute('data-phase')
    return
  }
  const now = state.stats?.at
  if (now === undefined) {
    el.textContent = 'Live: scheduled sale.'
    return
  }
  const phase = phaseOf(live, now)
  const inSeconds = (iso) => {
    const seconds = Math.max(0, Math.ceil((Date.parse(iso) - now) / 1000))
    return seconds >= 2 * 86_400 ? `${fmt(Math.floor(seconds / 86_400))} days` : duration(seconds)
  }
  const next =
    phase === 'scheduled'
      ? `; the pre-queue opens in ${inSeconds(live.prequeueAt)}`
      : phase === 'prequeue'
        ? `; the sale opens in ${inSeconds(live.opensAt)}. Its pre-queue and opening times can no longer change`
        : phase === 'open' && live.closesAt
          ? `; it closes in ${inSeconds(live.closesAt)}`
          : ''
  el.textContent = `Live now: ${PHASES[phase]}${next}.`
  el.setAttribute('data-phase', phase)
}

function renderSchedules() {
  for (const f of FIELDS) {
    if (!isSchedule(f)) continue
    renderZones(f)
    renderPhase(f)
  }
}

/** A schedule field: a group of three time boxes, each with its zone line and error line. */
function scheduleField(s) {
  const parts = SCHEDULE_PARTS.map((p) => {
    const id = `f-${s.name}-${p.key}`
    return h(
      'div',
      { class: 'field' },
      h('label', { for: id }, p.label),
      h('input', {
        id,
        name: `${s.name}.${p.key}`,
        type: 'text',
        spellcheck: 'false',
        autocomplete: 'off',
        placeholder: p.example,
        'aria-describedby': `t-${s.name}-${p.key} err-${s.name}-${p.key}`,
      }),
      h('p', { class: 'hint zone', id: `t-${s.name}-${p.key}` }),
      h('p', { class: 'field-error', id: `err-${s.name}-${p.key}` }),
    )
  })
  const clear = h('button', { type: 'button', class: 'link', id: `clear-${s.name}` }, 'No schedule: empty the three boxes')
  clear.addEventListener('click', () => {
    for (const c of controls(s.name)) c.value = ''
    clearFieldErrors()
    renderSchedules()
    partInput(s.name, SCHEDULE_PARTS[0].key).focus()
  })
  return h(
    'div',
    {
      class: 'field schedule',
      'data-setting': s.name,
      id: `f-${s.name}`,
      role: 'group',
      'aria-labelledby': `l-${s.name}`,
      'aria-describedby': `h-${s.name} p-${s.name} err-${s.name}`,
    },
    h('p', { class: 'group-label', id: `l-${s.name}` }, s.label),
    h('p', { class: 'hint', id: `h-${s.name}` }, `${s.help} All three empty: no schedule.`),
    h('p', { class: 'phase', id: `p-${s.name}`, role: 'status' }),
    ...parts,
    h('p', { class: 'field-error', id: `err-${s.name}` }),
    clear,
  )
}

// --- settings form ----------------------------------------------------------------------------

/** A number of a setting's unit, for its range: 600 seconds is "10 min", 604800 "7 days". */
function amount(n, unit) {
  if (unit !== 'seconds') return fmt(n)
  for (const [size, one, many] of [
    [86_400, 'day', 'days'],
    [3600, 'h', 'h'],
    [60, 'min', 'min'],
  ]) {
    if (n >= size && n % size === 0) return `${fmt(n / size)} ${n === size ? one : many}`
  }
  return `${fmt(n)} s`
}

/** The line under a field: a number's range and its help; a choice's help for the chosen value. */
function hintText(s, value) {
  if (s.type === 'choice') return s.choices[value]?.help ?? s.help
  if (s.type === 'integer') return [`${amount(s.min, s.unit)} – ${amount(s.max, s.unit)}`, s.help].filter((t) => t !== '').join('; ')
  return s.help
}

/** One field of the form, from its schema entry: label, input, hint and error line, tied by ids. */
function settingField(s) {
  if (s.type === 'schedule') return scheduleField(s)
  const hint = hintText(s, s.default)
  const hasHint = s.type === 'choice' || hint !== ''
  const describedBy = [hasHint ? `h-${s.name}` : null, `err-${s.name}`].filter(Boolean).join(' ')
  const common = { id: `f-${s.name}`, name: s.name, 'aria-describedby': describedBy }
  let input
  if (s.type === 'integer') {
    input = h('input', { ...common, type: 'number', inputmode: 'numeric', step: 1, min: s.min, max: s.max })
  } else if (s.type === 'choice') {
    input = h('select', common, ...s.values.map((v) => h('option', { value: v }, s.choices[v]?.label ?? v)))
  } else if (s.type === 'list') {
    input = h('textarea', { ...common, rows: 2, spellcheck: 'false' })
  } else if (s.type === 'ref') {
    input = h('input', { ...common, type: 'text', maxlength: s.maxLength, spellcheck: 'false', autocomplete: 'off', placeholder: 'none' })
  } else if (s.lines > 1) {
    input = h('textarea', { ...common, rows: s.lines, maxlength: s.maxLength })
  } else {
    input = h('input', { ...common, type: 'text', maxlength: s.maxLength })
  }
  return h(
    'div',
    { class: 'field', 'data-setting': s.name },
    h('label', { for: `f-${s.name}` }, s.label),
    input,
    hasHint ? h('p', { class: 'hint', id: `h-${s.name}` }, hint) : null,
    h('p', { class: 'field-error', id: `err-${s.name}` }),
  )
}

/** Builds the settings form from the schema: one fieldset per group, its fields in schema order. */
function buildForm(data) {
  schema.groups = data.groups
  schema.settings = data.settings.filter((s) => s.group !== null && data.groups.some((g) => g.name === s.group))
  schema.byName = Object.fromEntries(schema.settings.map((s) => [s.name, s]))
  FIELDS = schema.groups.flatMap((g) => schema.settings.filter((s) => s.group === g.name).map((s) => s.name))
  for (const s of schema.settings) LABELS[s.name] = s.unit === 'seconds' ? `${s.label} (s)` : s.label
  const sets = schema.groups
    .map((g) => {
      const fields = schema.settings.filter((s) => s.group === g.name).map(settingField)
      if (fields.length === 0) return null
      const body = g.columns > 1 ? [h('div', { class: `row${g.columns}` }, ...fields)] : fields
      return h('fieldset', {}, h('legend', {}, g.legend), ...body)
    })
    .filter(Boolean)
  const box = $('settings-fields')
  box.replaceChildren(...sets)
  box.removeAttribute('aria-busy')
}

/** Fetches the schema and builds the form, once per page. */
async function loadSchema() {
  if (FIELDS.length > 0) return
  const r = await api('GET', '/settings-schema')
  if (!r.ok || !Array.isArray(r.data?.settings)) {
    $('settings-fields').replaceChildren(
      h('p', { class: 'field-error' }, `The settings form could not be loaded: ${errorMessage(r, 'the edge refused')}. Reload the page.`),
    )
    return
  }
  buildForm(r.data)
}

/** A value as the form's box shows it: lists one entry a line. */
const formText = (v) => (v === undefined || v === null ? '' : Array.isArray(v) ? v.join('\n') : String(v))

/** Puts a value in its field's inputs: a schedule's times in its three boxes (null: all empty). */
function setField(f, v) {
  if (isSchedule(f)) {
    for (const p of SCHEDULE_PARTS) partInput(f, p.key).value = formText(v?.[p.key])
  } else fieldInput(f).value = formText(v)
}

function loadSettings(settings, etag) {
  state.loaded = settings
  state.etag = etag
  for (const f of FIELDS) {
    setField(f, settings[f])
    for (const c of controls(f)) c.classList.remove('reapplied')
  }
  clearFieldErrors()
  renderHints()
  renderSchedules()
  $('stale').hidden = true
  $('rev').textContent = `revision ${revOf(etag)}`
  $('room-where').textContent = where(settings)
  renderModeBadge(settings.mode)
}

/** The form's values, read as their schema types, and the fields that cannot be sent as they are. */
function readForm() {
  const values = {}
  const problems = []
  for (const f of FIELDS) {
    const type = schema.byName[f].type
    if (type === 'schedule') {
      // All empty: no schedule. Otherwise the edge judges the times, and names a bad one.
      const t = Object.fromEntries(SCHEDULE_PARTS.map((p) => [p.key, partInput(f, p.key).value.trim()]))
      if (Object.values(t).every((x) => x === '')) values[f] = null
      else values[f] = { prequeueAt: t.prequeueAt, opensAt: t.opensAt, ...(t.closesAt === '' ? {} : { closesAt: t.closesAt }) }
      continue
    }
    const raw = fieldInput(f).value
    if (type === 'integer') {
      const text = raw.trim()
      const n = Number(text)
      if (text === '' || !Number.isFinite(n)) problems.push({ field: f, message: 'Enter a whole number.' })
      values[f] = n
    } else if (type === 'list') {
      values[f] = raw
        .split(/[\n,]+/)
        .map((s) => s.trim())
        .filter((s) => s !== '')
    } else if (type === 'ref') {
      // An empty box: linked to nothing (null); otherwise the edge judges the id.
      values[f] = raw.trim() === '' ? null : raw.trim()
    } else values[f] = raw
  }
  return { values, problems }
}

function dirtyFields() {
  if (state.loaded === null) return []
  const { values } = readForm()
  return FIELDS.filter((f) => !same(values[f], state.loaded[f]))
}

/** A choice's hint follows the value chosen. */
function renderHints() {
  for (const s of schema.settings) if (s.type === 'choice') $(`h-${s.name}`).textContent = hintText(s, fieldInput(s.name).value)
}

function clearFieldErrors() {
  for (const f of FIELDS) {
    $(`err-${f}`).textContent = ''
    if (isSchedule(f)) for (const p of SCHEDULE_PARTS) $(`err-${f}-${p.key}`).textContent = ''
    for (const c of controls(f)) c.removeAttribute('aria-invalid')
  }
}

/**
 * Shows a message next to its field; "hosts[2]" belongs to the hosts box, as its line 3, and
 * "schedule.opensAt" to that box of the schedule. Returns where it went, or null.
 */
function fieldError(field, message) {
  const m = /^([A-Za-z]+)(?:\[(\d+)\]|\.([A-Za-z]+))?$/.exec(field ?? '')
  const name = m?.[1]
  if (!name || !FIELDS.includes(name)) return null
  const part = isSchedule(name) ? SCHEDULE_PARTS.find((p) => p.key === m[3]) : undefined
  let text = message.replace(/^[A-Za-z]+(\[\d+\]|\.[A-Za-z]+)?: /, '')
  text = text.charAt(0).toUpperCase() + text.slice(1)
  // Big numbers get separators; a schedule's messages hold dates, left as they are.
  if (!isSchedule(name)) text = text.replace(/\b\d{4,}\b/g, (d) => fmt(Number(d)))
  if (m[2] !== undefined) text = `Entry ${Number(m[2]) + 1}: ${text}`
  if (!/[.!?]$/.test(text)) text += '.'
  const control = part ? partInput(name, part.key) : controls(name)[0]
  $(part ? `err-${name}-${part.key}` : `err-${name}`).textContent = text
  for (const c of part ? [control] : controls(name)) c.setAttribute('aria-invalid', 'true')
  return { control, label: part ? `${LABELS[name]}, ${part.label.toLowerCase()}` : LABELS[name], text }
}

async function save(event) {
  event.preventDefault()
  if (state.saving || state.loaded === null) return
  clearFieldErrors()
  const { values, problems } = readForm()
  if (problems.length > 0) {
    for (const p of problems) fieldError(p.field, p.message)
    controls(problems[0].field)[0].focus()
    saveStatus(`Not saved: ${LABELS[problems[0].field]} needs a whole number.`, 'error')
    return
  }
  const changed = FIELDS.filter((f) => !same(values[f], state.loaded[f]))
  if (changed.length === 0) {
    saveStatus('Nothing to save: the form matches the live settings.')
    return
  }
  if (changed.includes('mode') && (values.mode === 'closed' || values.mode === 'passthrough')) {
    const closing = values.mode === 'closed'
    const ok = await confirmDialog({
      title: closing ? `Close ${state.roomId}?` : `Let everyone into ${state.roomId}?`,
      text: closing
        ? 'Nobody else gets in, and the queue page tells everyone waiting that the room is closed. People already inside keep their sessions.'
        : 'Pass-through admits every visitor at once, with no line and no rate limit. The site behind the room gets all of the traffic.',
      ok: closing ? 'Close room' : 'Let everyone in',
    })
    if (!ok) {
      saveStatus('Not saved.')
      return
    }
  }
  const patch = {}
  for (const f of changed) patch[f] = values[f]
  const room = state.roomId
  state.saving = true
  $('save').disabled = true
  saveStatus('Saving…')
  try {
    const r = await api('PATCH', `/rooms/${enc(room)}`, patch, { 'if-match': state.etag })
    if (room !== state.roomId) return
    // A refused value goes next to its field (or its box of a schedule).
    const shown = r.status === 400 ? fieldError(r.data?.error?.field, r.data?.error?.message ?? 'is not valid') : null
    if (r.ok) {
      loadSettings(r.data.settings, r.data.etag)
      hideConflict()
      saveStatus(`Saved: ${changed.map((f) => `${LABELS[f]} ${valueText(f, r.data.settings[f])}`).join('; ')}.`, 'ok')
      background(Promise.all([refreshRooms(), refreshAudit(), refreshStats()]))
    } else if (r.status === 412 && r.data?.error?.current) {
      showConflict(values, r.data.error.current, r.data.error.etag)
    } else if (shown !== null) {
      shown.control.focus()
      saveStatus(`Not saved: ${shown.label}: ${shown.text}`, 'error')
    } else if (r.status === 403) {
      saveStatus('Not saved: the request was refused (CSRF check). Reload the page and try again.', 'error')
    } else {
      saveStatus(`Not saved: ${errorMessage(r, 'the edge refused the change')}`, 'error')
    }
  } catch {
    saveStatus('Not saved: the edge did not answer. Try again.', 'error')
  } finally {
    state.saving = false
    $('save').disabled = false
  }
}

function revert() {
  if (state.loaded) loadSettings(state.loaded, state.etag)
  hideConflict()
  saveStatus('Edits discarded.')
}

// --- conflicts (412) --------------------------------------------------------------------------

function showConflict(mine, theirs, etag) {
  const base = state.loaded
  state.conflict = { mine, base, theirs, etag, mineChanged: FIELDS.filter((f) => !same(mine[f], base[f])) }
  const rows = FIELDS.filter((f) => !same(theirs[f], base[f]) || !same(mine[f], base[f])).map((f) => {
    const theirsChanged = !same(theirs[f], base[f])
    const mineChanged = !same(mine[f], base[f])
    return h(
      'tr',
      { 'data-field': f },
      h('th', { scope: 'row' }, LABELS[f]),
      h('td', { class: theirsChanged ? 'changed' : '' }, valueText(f, theirs[f])),
      h('td', { class: mineChanged ? 'changed' : 'muted' }, mineChanged ? valueText(f, mine[f]) : 'unchanged'),
    )
  })
  $('conflict-rows').replaceChildren(...rows)
  $('conflict-title').textContent = 'Someone else changed this room first'
  $('conflict-text').textContent = 'Nothing was saved. Their settings are live now; your edits are still in the form.'
  $('conflict-merge').textContent = 'Load theirs, keep my edits'
  $('conflict-merge').hidden = false
  $('conflict-theirs').hidden = false
  $('conflict').hidden = false
  $('stale').hidden = true
  saveStatus('Not saved: someone else changed this room first.', 'error')
  $('conflict').scrollIntoView({ block: 'nearest' })
  // Name who it was, from the audit log.
  const shown = state.conflict
  const named = refreshAudit().then(() => {
    const last = state.audit.find((e) => e.room === state.roomId && e.action !== 'session.end' && e.action !== 'sessions.end-all')
    const text = $('conflict-text')
    if (state.conflict !== shown || !last || !text.textContent.startsWith('Nothing was saved.')) return
    text.textContent = `Nothing was saved: ${last.who} changed it at ${clockTime(Date.parse(last.at), true)}. Their settings are live now; your edits are still in the form.`
  })
  background(named)
}

function hideConflict() {
  state.conflict = null
  $('conflict').hidden = true
}

/** Loads their settings and ETag; with `keepMine`, puts the user's own edits back on top. */
function resolveConflict(keepMine) {
  const c = state.conflict
  if (c === null) return
  loadSettings(c.theirs, c.etag)
  if (keepMine) {
    for (const f of c.mineChanged) {
      setField(f, c.mine[f])
      for (const x of controls(f)) x.classList.add('reapplied')
    }
    renderSchedules()
    $('conflict-title').textContent = 'Their settings are loaded, with your edits on top'
    $('conflict-text').textContent = 'Check the highlighted fields and save again.'
    $('conflict-merge').hidden = true
    saveStatus(`Loaded revision ${revOf(c.etag)}; your edits to ${c.mineChanged.map((f) => LABELS[f]).join(', ')} are back in the form.`)
    controls(c.mineChanged[0] ?? FIELDS[0])[0].focus()
  } else {
    $('conflict-title').textContent = 'Their settings are loaded'
    $('conflict-text').textContent = 'Your edits are listed below if you want to make them again.'
    $('conflict-merge').textContent = 'Re-apply my edits'
    $('conflict-merge').hidden = false
    saveStatus(`Loaded revision ${revOf(c.etag)}; your edits were not applied.`)
  }
  $('conflict-theirs').hidden = true
}

async function reviewStale() {
  const r = await api('GET', `/rooms/${enc(state.roomId)}`)
  if (!r.ok) return
  showConflict(readForm().values, r.data.settings, r.data.etag)
  $('conflict-text').textContent = 'These settings are live now. Your edits are still in the form and not saved.'
  saveStatus('')
}

// --- actions ----------------------------------------------------------------------------------

function confirmDialog({ title, text, ok }) {
  const dialog = $('confirm')
  $('confirm-title').textContent = title
  $('confirm-text').textContent = text
  $('confirm-ok').textContent = ok
  dialog.returnValue = ''
  dialog.showModal()
  $('confirm-cancel').focus()
  return new Promise((resolve) => {
    dialog.addEventListener('close', () => resolve(dialog.returnValue === 'ok'), { once: true })
  })
}

async function roomAction(kind) {
  const room = state.roomId
  if (room === null) return
  if (kind === 'close') {
    const ok = await confirmDialog({
      title: `Close ${room}?`,
      text: 'Nobody else gets in, and the queue page tells everyone waiting that the room is closed. People already inside keep their sessions. You can resume later.',
      ok: 'Close room',
    })
    if (!ok) return announce('Nothing changed: the room is still open.')
  }
  if (kind === 'end-all') {
    const active = state.stats?.active
    const ok = await confirmDialog({
      title: `End all sessions in ${room}?`,
      text: `${active === undefined ? 'Every' : `All ${fmt(active)}`} active session${active === 1 ? '' : 's'} end now. Their places go to people in line, and those visitors have to queue again. This cannot be undone.`,
      ok: 'End all sessions',
    })
    if (!ok) return announce('Nothing changed: no sessions were ended.')
  }
  const path = kind === 'end-all' ? `/rooms/${enc(room)}/sessions/end-all` : `/rooms/${enc(room)}/${kind}`
  const r = await api('POST', path).catch(() => null)
  if (r === null) return announce('The edge did not answer; nothing changed. Try again.', 'error')
  if (!r.ok) return announce(`Refused: ${errorMessage(r, 'the edge refused')}`, 'error')
  if (kind === 'end-all') announce(`Ended ${fmt(r.data.ended)} session${r.data.ended === 1 ? '' : 's'} in ${room}.`, 'ok')
  else {
    // Only the mode changed: keep the user's other edits in the form.
    const dirty = dirtyFields().filter((f) => f !== 'mode')
    const edits = readForm().values
    loadSettings(r.data.settings, r.data.etag)
    for (const f of dirty) setField(f, edits[f])
    renderSchedules()
    const done = { pause: 'paused: people keep their places, nobody new gets in', resume: 'open again', close: 'closed' }[kind]
    announce(`${room} is ${done}.`, 'ok')
  }
  await Promise.all([refreshStats(), refreshAudit(), refreshRooms()])
}

function renderAudit() {
  const rows = state.audit.map((e) => {
    const t = Date.parse(e.at)
    return h(
      'tr',
      {},
      h('td', { class: 'nowrap' }, h('time', { datetime: e.at, title: new Date(t).toString() }, clockTime(t, true))),
      h('td', {}, e.who),
      h('td', {}, e.room ?? '–'),
      h('td', {}, describe(e)),
    )
  })
  if (rows.length === 0) rows.push(h('tr', {}, h('td', { colspan: 4, class: 'muted' }, 'No changes yet.')))
  $('audit-rows').replaceChildren(...rows)
}

const quoted = (f, v) => (schema.byName[f]?.type === 'text' ? `“${valueText(f, v)}”` : valueText(f, v))

function describe(e) {
  switch (e.action) {
    case 'room.pause':
      return 'Paused the room'
    case 'room.resume':
      return 'Resumed the room'
    case 'room.close':
      return 'Closed the room'
    case 'sessions.end-all':
      return `Ended all sessions (${fmt(e.after?.ended)})`
    case 'session.end':
      return 'Ended one session'
    case 'sessions.end':
      return `Ended ${fmt(e.after?.ended)} of ${fmt(e.before?.visitors?.length)} listed sessions`
    case 'settings.update': {
      const b = e.before ?? {}
      const a = e.after ?? {}
      const parts = FIELDS.filter((f) => !same(a[f], b[f])).map((f) => `${LABELS[f]} ${quoted(f, b[f])} → ${quoted(f, a[f])}`)
      return parts.length ? parts.join('; ') : 'Saved without changes'
    }
    default:
      return describeAccess(e) ?? describeBypass(e) ?? describePage(e) ?? e.action
  }
}

// --- start ------------------------------------------------------------------------------------

function bind() {
  $('signin-form').addEventListener('submit', signIn)
  $('token').addEventListener('input', () => $('token').removeAttribute('aria-invalid'))
  $('signout').addEventListener('click', () => background(signOut()))
  $('settings').addEventListener('submit', save)
  $('revert').addEventListener('click', revert)
  $('pause').addEventListener('click', () => background(roomAction('pause')))
  $('resume').addEventListener('click', () => background(roomAction('resume')))
  $('close').addEventListener('click', () => background(roomAction('close')))
  $('endall').addEventListener('click', () => background(roomAction('end-all')))
  $('conflict-merge').addEventListener('click', () => resolveConflict(true))
  $('conflict-theirs').addEventListener('click', () => resolveConflict(false))
  $('stale-load').addEventListener('click', () => background(reviewStale()))
  $('view-live').addEventListener('click', () => showView('live'))
  $('view-report').addEventListener('click', () => showView('report'))
  $('view-access').addEventListener('click', () => showView('access'))
  $('view-bypass').addEventListener('click', () => showView('bypass'))
  $('view-page').addEventListener('click', () => showView('page'))
  // The fields come later, from the schema: one listener on the form serves them all.
  $('settings').addEventListener('input', (event) => {
    // A schedule's boxes are named "schedule.opensAt". Its rules tie the times together, so typing
    // in one box clears the errors of all three.
    const f = String(event.target.name).split('.')[0]
    if (!FIELDS.includes(f)) return
    $(`err-${f}`).textContent = ''
    if (isSchedule(f)) for (const p of SCHEDULE_PARTS) $(`err-${f}-${p.key}`).textContent = ''
    for (const c of controls(f)) c.removeAttribute('aria-invalid')
    renderHints()
    if (isSchedule(f)) renderZones(f)
  })
  new ResizeObserver(() => renderChart()).observe($('chart-box'))
  document.addEventListener('visibilitychange', () => {
    if (!document.hidden && state.who !== null) background(refreshStats())
  })
}

async function boot() {
  bind()
  try {
    const r = await api('GET', '/session')
    if (r.ok) await signedIn(r.data)
    else showSignin()
  } catch {
    showSignin('The edge did not answer. Reload the page to try again.')
  }
}

void boot()
