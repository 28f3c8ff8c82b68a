// Anteroom admin UI: the settings form, built from the schema the edge serves (GET /api/settings-schema,
// made from src/core/settings.ts); reading it, showing a refused value next to its field, and saving
// the changed fields with the ETag the form was loaded with (If-Match).

import { confirmDialog } from './actions.js'
import {
  $,
  api,
  background,
  enc,
  errorMessage,
  FIELDS,
  fieldInput,
  fmt,
  h,
  LABELS,
  revOf,
  same,
  saveStatus,
  schema,
  state,
  valueText,
} from './common.js'
import { hideConflict, showConflict } from './conflict.js'
import { renderModeBadge } from './live.js'
import { refreshAudit, refreshRooms, refreshStats } from './polling.js'
import { where } from './rooms.js'
import { controls, isSchedule, partInput, renderSchedules, SCHEDULE_PARTS, scheduleField } from './schedule.js'

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
  FIELDS.splice(0, FIELDS.length, ...schema.groups.flatMap((g) => schema.settings.filter((s) => s.group === g.name).map((s) => s.name)))
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
export async function loadSchema() {
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
export function setField(f, v) {
  if (isSchedule(f)) {
    for (const p of SCHEDULE_PARTS) partInput(f, p.key).value = formText(v?.[p.key])
  } else fieldInput(f).value = formText(v)
}

export function loadSettings(settings, etag) {
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
export function readForm() {
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

export function dirtyFields() {
  if (state.loaded === null) return []
  const { values } = readForm()
  return FIELDS.filter((f) => !same(values[f], state.loaded[f]))
}

/** A choice's hint follows the value chosen. */
export function renderHints() {
  for (const s of schema.settings) if (s.type === 'choice') $(`h-${s.name}`).textContent = hintText(s, fieldInput(s.name).value)
}

export function clearFieldErrors() {
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

export async function save(event) {
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

export function revert() {
  if (state.loaded) loadSettings(state.loaded, state.etag)
  hideConflict()
  saveStatus('Edits discarded.')
}
