// Anteroom admin UI: the room's buttons (pause, resume, close, end all sessions) and the dialog
// that asks before a change that cannot be taken back lightly.

import { $, announce, api, enc, errorMessage, fmt, state } from './common.js'
import { refreshAudit, refreshRooms, refreshStats } from './polling.js'
import { renderSchedules } from './schedule.js'
import { dirtyFields, loadSettings, readForm, setField } from './settings.js'

export function confirmDialog({ title, text, ok }) {
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

export async function roomAction(kind) {
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
