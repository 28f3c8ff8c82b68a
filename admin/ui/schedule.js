// Anteroom admin UI: a scheduled sale in the settings form: the three time boxes, each time shown in
// its zone, UTC and the browser's zone, and the live schedule's phase on the edge's clock.

import { $, duration, FIELDS, fieldInput, fmt, h, schema, state } from './common.js'
import { clearFieldErrors } from './settings.js'

/** A schedule setting's three times, each a box of the form. */
export const SCHEDULE_PARTS = [
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

export const isSchedule = (f) => schema.byName[f]?.type === 'schedule'
export const partInput = (f, key) => $(`f-${f}-${key}`)
/** A field's inputs: one, or a schedule's three. */
export const controls = (f) => (isSchedule(f) ? SCHEDULE_PARTS.map((p) => partInput(f, p.key)) : [fieldInput(f)])

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
export function renderZones(f) {
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

export function renderSchedules() {
  for (const f of FIELDS) {
    if (!isSchedule(f)) continue
    renderZones(f)
    renderPhase(f)
  }
}

/** A schedule field: a group of three time boxes, each with its zone line and error line. */
export function scheduleField(s) {
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
