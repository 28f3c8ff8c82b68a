// Anteroom admin UI: the list of rooms on the left, and opening one (the form, the numbers, the view).

import { confirmDialog } from './actions.js'
import { $, announce, api, background, enc, h, MODE_NAMES, saveStatus, state } from './common.js'
import { hideConflict } from './conflict.js'
import { renderDefence } from './live.js'
import { refreshStats } from './polling.js'
import { dirtyFields, loadSettings } from './settings.js'
import { access, bypass, pageView, report } from './views.js'

export function where(settings) {
  const hosts = settings.hosts.length ? settings.hosts.join(', ') : 'any host'
  const paths = settings.paths.length ? settings.paths.join(', ') : 'every path'
  return `${hosts} · ${paths}`
}

export function renderRoomList() {
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

export async function selectRoom(id) {
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
