// Anteroom admin UI: a save refused because someone else changed the room first (412): their values
// and yours side by side, who it was (from the audit log), and loading theirs with or without your edits.

import { $, api, background, clockTime, enc, FIELDS, h, LABELS, revOf, same, saveStatus, state, valueText } from './common.js'
import { refreshAudit } from './polling.js'
import { controls, renderSchedules } from './schedule.js'
import { loadSettings, readForm, setField } from './settings.js'

export function showConflict(mine, theirs, etag) {
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

export function hideConflict() {
  state.conflict = null
  $('conflict').hidden = true
}

/** Loads their settings and ETag; with `keepMine`, puts the user's own edits back on top. */
export function resolveConflict(keepMine) {
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

export async function reviewStale() {
  const r = await api('GET', `/rooms/${enc(state.roomId)}`)
  if (!r.ok) return
  showConflict(readForm().values, r.data.settings, r.data.etag)
  $('conflict-text').textContent = 'These settings are live now. Your edits are still in the form and not saved.'
  saveStatus('')
}
