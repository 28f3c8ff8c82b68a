// Anteroom admin UI: what every part of the page shares. The constants, the page's state, the
// settings' schema as the edge serves it, small helpers (building elements, formatting numbers and
// values), the admin API call (with the CSRF token from /api/session), and the sign-in screen a 401
// falls back to. It imports nothing, so every other module can use it from its first line.

export const BASE = '/_anteroom'
const API = `${BASE}/api`

export const WINDOW_MS = 30 * 60_000

const SVG_NS = 'http://www.w3.org/2000/svg'

/**
 * The room settings' schema, from the edge (GET /api/settings-schema, made from src/core/settings.ts):
 * the settings form, its labels, ranges and help, and how each value is read and shown come from it.
 */
export const schema = { groups: [], settings: [], byName: {} }
/** The names of the settings in the form, in its order. */
export const FIELDS = []
/** How messages, conflicts and the audit log name a setting: its label, with its unit. */
export const LABELS = {}
export const MODE_NAMES = { fifo: 'Open line', paused: 'Paused', passthrough: 'Pass-through', closed: 'Closed' }

export const state = {
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

export const $ = (id) => document.getElementById(id)
export const fieldInput = (name) => $(`f-${name}`)
export const fmt = (n) => (typeof n === 'number' && Number.isFinite(n) ? n.toLocaleString('en-US') : '–')
export const enc = encodeURIComponent
export const revOf = (etag) => Number(/^"rev-(\d+)"$/.exec(etag ?? '')?.[1] ?? 0)

/** Builds an element: h('td', { class: 'x' }, 'text', child). Text goes in as text, never as HTML. */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag)
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue
    if (k === 'class') el.className = v
    else el.setAttribute(k, v === true ? '' : String(v))
  }
  for (const c of children) if (c !== null && c !== undefined) el.append(c instanceof Node ? c : String(c))
  return el
}

export function svg(tag, attrs = {}, text) {
  const el = document.createElementNS(SVG_NS, tag)
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v))
  if (text !== undefined) el.textContent = text
  return el
}

export function clockTime(ms, seconds = false) {
  return new Date(ms).toLocaleTimeString('en-GB', { hour: '2-digit', minute: '2-digit', second: seconds ? '2-digit' : undefined })
}

export function duration(seconds) {
  if (seconds === null || seconds === undefined) return 'unknown'
  if (seconds === 0) return 'none'
  if (seconds < 60) return '< 1 min'
  const min = Math.round(seconds / 60)
  if (min < 60) return `${min} min`
  return `${Math.floor(min / 60)} h ${min % 60} min`
}

export function valueText(field, v) {
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
export const same = (a, b) =>
  a === b ||
  ((a === undefined || a === null || typeof a === 'object' || typeof b === 'object') &&
    JSON.stringify(canonical(a)) === JSON.stringify(canonical(b)))

/** Calls the admin API; a 401 while signed in means the session ended. */
export async function api(method, path, body, headers = {}) {
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
export const background = (promise) => {
  promise.catch(markOffline)
}

export const errorMessage = (r, fallback) => r.data?.error?.message ?? `${fallback} (HTTP ${r.status})`

export function announce(text, kind = 'info') {
  const el = $('announce')
  el.textContent = text
  el.className = `announce ${kind}`
}

export function saveStatus(text, kind = 'info') {
  const el = $('save-status')
  el.textContent = text
  el.className = `save-status ${kind}`
}

/** A schedule in one line, its times as written: for messages, conflicts and the audit log. */
function scheduleText(v) {
  if (v === undefined || v === null) return 'none'
  const parts = [`pre-queue ${v.prequeueAt}`, `opens ${v.opensAt}`]
  if (v.closesAt) parts.push(`closes ${v.closesAt}`)
  return parts.join(', ')
}

// --- the sign-in screen (a 401 leads back to it), and the Store tile when the edge is silent ---

export function showSignin(message = '') {
  $('loading').hidden = true
  $('app').hidden = true
  $('signin').hidden = false
  const err = $('signin-error')
  err.textContent = message
  err.classList.toggle('info', message !== '' && !message.startsWith('That'))
  $('token').focus()
}

export function signedOut(message) {
  state.loop++
  state.who = null
  state.csrf = null
  state.roomId = null
  state.loaded = null
  showSignin(message)
}

export function markOffline() {
  $('stat-store').textContent = 'No answer'
  $('stat-store').className = 'stat-value down'
  $('note-store').textContent = 'the edge did not answer'
}
