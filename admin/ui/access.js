// Anteroom admin UI: the Access view of a room, from /api/rooms/:id/access (admin/access.ts): its access
// codes and invite links with their uses, a form to make codes (shown once, here: the edge keeps only
// their MACs) or an invite link, and revocation after a confirmation. A refused value is told next to
// its field. Whether the room takes codes, and its separate lane, are its settings (the Live view's
// form); this view says where they stand and can switch codes on. views.js imports it and lends its helpers.

const DAY_MS = 86_400_000
const FIELDS = ['count', 'maxUses', 'expiresAt', 'lane', 'label']
const LANE_NAMES = { priority: 'Before the public line', separate: 'Separate lane' }
const STATE_NAMES = { active: 'Active', used_up: 'Used up', expired: 'Expired', revoked: 'Revoked' }

/** A datetime-local value (the admin's zone) for a time in ms. */
function localInput(ms) {
  const d = new Date(ms)
  const two = (n) => String(n).padStart(2, '0')
  return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())}T${two(d.getHours())}:${two(d.getMinutes())}`
}

/** The audit log's words for an access entry (audit.js asks for entries it does not know); undefined for others. */
export function describeAccess(e) {
  if (e.action === 'access.create') {
    const a = e.after ?? {}
    const what = a.kind === 'link' ? 'an invite link' : `${a.count} access code${a.count === 1 ? '' : 's'}`
    return `Made ${what} (${LANE_NAMES[a.lane] ?? a.lane}, ${a.maxUses} use${a.maxUses === 1 ? '' : 's'} each${a.label ? `, “${a.label}”` : ''})`
  }
  if (e.action === 'access.revoke') {
    const b = e.before ?? {}
    return `Revoked ${b.kind === 'link' ? 'an invite link' : 'an access code'}${b.label ? ` “${b.label}”` : ''} (${b.used} of ${b.maxUses} used)`
  }
  return undefined
}

/**
 * The Access view. `ui` is what views.js lends it: api(method, path, body, headers), h(tag, attrs, ...children),
 * fmt(n), confirmDialog({ title, text, ok }), serverNow() (the server's time, ms) and changed() (called
 * after a making or a revocation: the audit log and the room reload).
 */
export function createAccessView(ui) {
  const { api, h, fmt, confirmDialog } = ui
  const view = { room: null, el: null, data: null, loading: 0, busy: false }
  const $ = (id) => document.getElementById(id)
  const enc = encodeURIComponent

  function field(name, label, control, hint) {
    return h(
      'div',
      { class: 'field' },
      h('label', { for: `access-${name}` }, label),
      control,
      hint ? h('p', { class: 'hint', id: `access-${name}-hint` }, hint) : null,
      h('p', { class: 'field-error', id: `access-err-${name}`, role: 'alert' }),
    )
  }

  function build(root) {
    const kind = h(
      'fieldset',
      { class: 'access-kind' },
      h('legend', { class: 'group-label' }, 'Make'),
      h('label', {}, h('input', { type: 'radio', name: 'kind', value: 'code', id: 'access-kind-code', checked: true }), ' Access codes'),
      h('label', {}, h('input', { type: 'radio', name: 'kind', value: 'link', id: 'access-kind-link' }), ' An invite link'),
    )
    const lane = h(
      'select',
      { id: 'access-lane', name: 'lane', 'aria-describedby': 'access-lane-hint' },
      h('option', { value: 'priority' }, LANE_NAMES.priority),
      h('option', { value: 'separate' }, LANE_NAMES.separate),
    )
    const form = h(
      'form',
      { id: 'access-form', class: 'card access-form', novalidate: true, 'aria-labelledby': 'access-form-heading' },
      h('h2', { id: 'access-form-heading' }, 'Make codes or a link'),
      kind,
      h(
        'div',
        { class: 'row3' },
        field('count', 'How many codes', h('input', { id: 'access-count', name: 'count', type: 'number', min: 1, max: 500, value: 10 })),
        field(
          'maxUses',
          'Uses each',
          h('input', {
            id: 'access-maxUses',
            name: 'maxUses',
            type: 'number',
            min: 1,
            value: 1,
            'aria-describedby': 'access-maxUses-hint',
          }),
          'Visitors each one may place',
        ),
        field(
          'expiresAt',
          'Valid until',
          h('input', { id: 'access-expiresAt', name: 'expiresAt', type: 'datetime-local', 'aria-describedby': 'access-expiresAt-hint' }),
          'Your time zone',
        ),
      ),
      h(
        'div',
        { class: 'row2' },
        field('lane', 'Lane', lane, 'Before the public line: at the room’s cap and rate. Separate: the room’s own lane, at its own.'),
        field(
          'label',
          'Label',
          h('input', { id: 'access-label', name: 'label', type: 'text', maxlength: 80, placeholder: 'Fan club presale' }),
        ),
      ),
      h(
        'div',
        { class: 'form-foot' },
        h('button', { type: 'submit', id: 'access-create', class: 'primary' }, 'Make codes'),
        h('p', { id: 'access-status', class: 'save-status', role: 'status', 'aria-live': 'polite' }),
      ),
    )
    form.addEventListener('submit', (event) => {
      event.preventDefault()
      void create()
    })
    form.addEventListener('change', (event) => {
      if (event.target.name === 'kind') renderKind()
    })
    form.addEventListener('input', (event) => {
      const err = $(`access-err-${event.target.name}`)
      if (err) err.textContent = ''
      event.target.removeAttribute('aria-invalid')
    })
    root.replaceChildren(
      h(
        'div',
        { class: 'report-head' },
        h(
          'div',
          {},
          h('h2', { class: 'report-title' }, 'Access codes and invite links'),
          h('p', { class: 'muted small', id: 'access-span' }, ''),
        ),
        h('div', { class: 'report-tools' }, h('button', { type: 'button', id: 'access-refresh', class: 'ghost' }, 'Refresh')),
      ),
      h('p', { id: 'access-takes', class: 'notice', hidden: true }),
      h(
        'div',
        { class: 'access-grid' },
        form,
        h(
          'section',
          { class: 'card access-lane-card', 'aria-labelledby': 'access-lane-heading' },
          h('div', { class: 'card-head' }, h('h2', { id: 'access-lane-heading' }, 'Separate lane')),
          h('p', { id: 'access-lane-state', class: 'stock-state' }, '–'),
          h(
            'dl',
            { class: 'defence', id: 'access-lane-numbers' },
            h('div', {}, h('dt', {}, 'Max active'), h('dd', { id: 'access-lane-cap' }, '–')),
            h('div', {}, h('dt', {}, 'Admit per minute'), h('dd', { id: 'access-lane-rate' }, '–')),
            h('div', {}, h('dt', {}, 'Waiting'), h('dd', { id: 'access-lane-waiting' }, '–')),
            h('div', {}, h('dt', {}, 'Active'), h('dd', { id: 'access-lane-active' }, '–')),
          ),
          h('p', { class: 'muted small' }, 'Set in the room’s settings (Live view): Separate lane, max active and rate per minute.'),
        ),
      ),
      h('section', { id: 'access-result', class: 'card access-result', hidden: true, 'aria-labelledby': 'access-result-heading' }),
      h(
        'section',
        { class: 'card', 'aria-labelledby': 'access-list-heading' },
        h(
          'div',
          { class: 'card-head' },
          h('h2', { id: 'access-list-heading' }, 'Codes and links'),
          h('span', { class: 'muted small', id: 'access-total' }),
        ),
        h(
          'div',
          { class: 'table-wrap' },
          h(
            'table',
            { class: 'access-table' },
            h(
              'thead',
              {},
              h(
                'tr',
                {},
                ...['Label', 'Kind', 'Lane', 'Uses', 'Valid until', 'State', 'Made by', ''].map((t) => h('th', { scope: 'col' }, t)),
              ),
            ),
            h('tbody', { id: 'access-rows' }),
          ),
        ),
      ),
    )
    $('access-refresh').addEventListener('click', () => void load())
    $('access-expiresAt').value = localInput(ui.serverNow() + 7 * DAY_MS)
    renderKind()
  }

  function kindOf() {
    return $('access-kind-link').checked ? 'link' : 'code'
  }

  function renderKind() {
    const link = kindOf() === 'link'
    $('access-count').disabled = link
    $('access-count').closest('.field').hidden = link
    $('access-create').textContent = link ? 'Make the link' : 'Make codes'
  }

  function status(text, kind = 'info') {
    const el = $('access-status')
    el.textContent = text
    el.className = `save-status ${kind}`
  }

  function clearErrors() {
    for (const f of FIELDS) {
      $(`access-err-${f}`).textContent = ''
      $(`access-${f}`).removeAttribute('aria-invalid')
    }
  }

  /** Shows the edge's message next to the field it names; false if it names none of the form's. */
  function fieldError(field, message) {
    if (!FIELDS.includes(field)) return false
    let text = message.replace(/^[A-Za-z]+: /, '')
    text = text.charAt(0).toUpperCase() + text.slice(1)
    if (!/[.!?]$/.test(text)) text += '.'
    $(`access-err-${field}`).textContent = text
    $(`access-${field}`).setAttribute('aria-invalid', 'true')
    $(`access-${field}`).focus()
    return true
  }

  /** A whole number from a box, or the text itself (the edge then refuses it, naming the field). */
  function number(id) {
    const text = $(id).value.trim()
    return /^-?\d+$/.test(text) ? Number(text) : text
  }

  async function create() {
    if (view.busy || view.room === null) return
    clearErrors()
    const kind = kindOf()
    const local = $('access-expiresAt').value
    const when = local === '' ? Number.NaN : new Date(local).getTime()
    const body = {
      ...(kind === 'code' ? { count: number('access-count') } : {}),
      maxUses: number('access-maxUses'),
      expiresAt: Number.isNaN(when) ? local : new Date(when).toISOString(),
      lane: $('access-lane').value,
      label: $('access-label').value,
    }
    const room = view.room
    view.busy = true
    $('access-create').disabled = true
    status(kind === 'code' ? 'Making codes…' : 'Making the link…')
    try {
      const r = await api('POST', `/rooms/${enc(room)}/access/${kind === 'code' ? 'codes' : 'links'}`, body)
      if (room !== view.room) return
      if (r.ok) {
        status(kind === 'code' ? `Made ${fmt(r.data.codes.length)} codes.` : 'Made the link.', 'ok')
        showResult(kind, r.data)
        await load()
        ui.changed?.()
      } else if (r.status === 400 && fieldError(r.data?.error?.field, r.data?.error?.message ?? 'is not valid')) {
        status(`Not made: ${r.data.error.message}`, 'error')
      } else status(`Not made: ${r.data?.error?.message ?? `the edge answered ${r.status}`}`, 'error')
    } catch {
      status('The edge did not answer; nothing was made. Try again.', 'error')
    } finally {
      view.busy = false
      $('access-create').disabled = false
    }
  }

  /** An absolute link for a path of the room: its first host if it has one, else this page's. */
  function absolute(path) {
    const host = view.data?.hosts?.[0]
    return host ? `https://${host}${path}` : `${location.origin}${path}`
  }

  function copyButton(id, text) {
    const b = h('button', { type: 'button', id, class: 'ghost' }, 'Copy')
    b.addEventListener('click', () => {
      navigator.clipboard?.writeText(text).then(
        () => {
          b.textContent = 'Copied'
        },
        () => {
          b.textContent = 'Select and copy it'
        },
      )
    })
    return b
  }

  /** What was just made: the codes (shown here once) or the link. */
  function showResult(kind, data) {
    const el = $('access-result')
    el.hidden = false
    if (kind === 'code') {
      const text = data.codes.join('\n')
      const csv = `code,label,uses,valid until\n${data.codes.map((c, i) => `${c},"${String(data.grants[i].label).replace(/"/g, '""')}",${data.grants[i].maxUses},${new Date(data.grants[i].expiresAt).toISOString()}`).join('\n')}\n`
      const download = h(
        'a',
        { id: 'access-download', class: 'button-link', download: `access-codes-${view.room}.csv`, href: '#' },
        'Download CSV',
      )
      download.href = URL.createObjectURL(new Blob([csv], { type: 'text/csv' }))
      el.replaceChildren(
        h('h2', { id: 'access-result-heading' }, `${fmt(data.codes.length)} new code${data.codes.length === 1 ? '' : 's'}`),
        h('p', { class: 'notice' }, 'Copy or download them now: they are not shown again (the edge keeps only a fingerprint of each).'),
        h('ol', { id: 'access-codes', class: 'access-codes' }, ...data.codes.map((c) => h('li', {}, h('code', {}, c)))),
        h('div', { class: 'form-foot' }, copyButton('access-copy', text), download),
      )
    } else {
      const url = absolute(data.link)
      el.replaceChildren(
        h('h2', { id: 'access-result-heading' }, 'The invite link'),
        h(
          'p',
          { class: 'muted small' },
          'Anyone with it joins the lane, until its uses are gone, it expires or you revoke it. You can show it again below.',
        ),
        h('p', {}, h('code', { id: 'access-link', class: 'access-link' }, url)),
        h('div', { class: 'form-foot' }, copyButton('access-copy', url)),
      )
    }
  }

  async function showLink(g) {
    const r = await api('GET', `/rooms/${enc(view.room)}/access/${enc(g.id)}/link`)
    if (r.ok) showResult('link', r.data)
    else status(`Could not show the link: ${r.data?.error?.message ?? r.status}`, 'error')
  }

  async function revoke(g) {
    const what = g.kind === 'link' ? 'this invite link' : `the code ending ${g.hint}`
    const ok = await confirmDialog({
      title: `Revoke ${what}?`,
      text: `Nobody can use it from now on, on any edge (${fmt(g.used)} of ${fmt(g.maxUses)} used). Visitors who already used it keep their places. This cannot be undone.`,
      ok: 'Revoke',
    })
    if (!ok) return status('Nothing was revoked.')
    const r = await api('POST', `/rooms/${enc(view.room)}/access/${enc(g.id)}/revoke`)
    if (!r.ok) return status(`Not revoked: ${r.data?.error?.message ?? r.status}`, 'error')
    status(`Revoked ${what}.`, 'ok')
    await load()
    ui.changed?.()
  }

  function render() {
    const d = view.data
    if (d === null) return
    const now = ui.serverNow()
    const takes = $('access-takes')
    takes.hidden = d.takesCodes
    if (!d.takesCodes) {
      const on = h('button', { type: 'button', id: 'access-turn-on', class: 'link' }, 'Take codes in this room')
      on.addEventListener('click', () => void takeCodes())
      takes.replaceChildren(
        'This room does not take access codes: its visitors’ ?code= goes to the origin, and nothing here works until it does. ',
        on,
      )
    }
    $('access-span').textContent = `${fmt(d.total)} code${d.total === 1 ? '' : 's'} and link${d.total === 1 ? '' : 's'} in ${d.room}`
    const lane = d.lane
    $('access-lane-state').textContent =
      lane.activeUsers > 0 ? 'Open: its holders are admitted at its own limits' : 'None: give it a cap in the settings to open it'
    $('access-lane-state').dataset.state = lane.activeUsers > 0 ? 'open' : 'none'
    $('access-lane-cap').textContent = lane.activeUsers > 0 ? fmt(lane.activeUsers) : 'none'
    $('access-lane-rate').textContent = fmt(lane.usersPerMinute)
    $('access-lane-waiting').textContent = lane.line ? fmt(lane.line.waiting) : '–'
    $('access-lane-active').textContent = lane.line ? fmt(lane.line.active) : '–'
    $('access-lane').querySelector('option[value="separate"]').disabled = lane.activeUsers === 0
    $('access-total').textContent = d.grants.length < d.total ? `the newest ${fmt(d.grants.length)}` : ''
    const rows = d.grants.map((g) => {
      const actions = h('td', { class: 'nowrap' })
      if (g.kind === 'link') {
        const show = h('button', { type: 'button', class: 'ghost', 'data-link': g.id }, 'Show link')
        show.addEventListener('click', () => void showLink(g))
        actions.append(show, ' ')
      }
      if (g.state !== 'revoked') {
        const r = h('button', { type: 'button', class: 'danger-outline', 'data-revoke': g.id }, 'Revoke')
        r.addEventListener('click', () => void revoke(g))
        actions.append(r)
      }
      const expires = new Date(g.expiresAt)
      return h(
        'tr',
        { 'data-grant': g.id, 'data-state': g.state },
        h('td', {}, g.label || h('span', { class: 'muted' }, '(no label)')),
        h('td', {}, g.kind === 'link' ? 'Invite link' : `Code …${g.hint}`),
        h('td', {}, LANE_NAMES[g.lane] ?? g.lane),
        h('td', { class: 'nowrap' }, `${fmt(g.used)} of ${fmt(g.maxUses)}`),
        h(
          'td',
          { class: 'nowrap' },
          h(
            'time',
            { datetime: expires.toISOString(), title: expires.toString() },
            expires.toLocaleString('en-GB', { dateStyle: 'medium', timeStyle: 'short' }),
          ),
        ),
        h(
          'td',
          {},
          h('span', { class: `badge access-${g.state}` }, STATE_NAMES[g.state] ?? g.state),
          g.expiresAt <= now && g.state === 'active' ? ' (now expired)' : '',
        ),
        h('td', {}, g.createdBy),
        actions,
      )
    })
    if (rows.length === 0) rows.push(h('tr', {}, h('td', { colspan: 8, class: 'muted' }, 'No codes or links yet.')))
    $('access-rows').replaceChildren(...rows)
  }

  /** Turns the room's accessCodes on (a settings change, with its ETag and the audit). */
  async function takeCodes() {
    const room = view.room
    const current = await api('GET', `/rooms/${enc(room)}`)
    if (!current.ok) return status('Could not read the room’s settings. Try again.', 'error')
    const r = await api('PATCH', `/rooms/${enc(room)}`, { accessCodes: 'on' }, { 'if-match': current.data.etag })
    if (!r.ok) return status(`Not changed: ${r.data?.error?.message ?? r.status}`, 'error')
    status(`${room} takes access codes now.`, 'ok')
    await load()
    ui.changed?.()
  }

  async function load() {
    const room = view.room
    if (room === null) return
    const id = ++view.loading
    const [r, settings] = await Promise.all([api('GET', `/rooms/${enc(room)}/access?limit=1000`), api('GET', `/rooms/${enc(room)}`)])
    if (id !== view.loading || room !== view.room) return
    if (!r.ok) {
      status(`The access list could not be read: ${r.data?.error?.message ?? r.status}`, 'error')
      return
    }
    view.data = { ...r.data, hosts: settings.ok ? settings.data.settings.hosts : [] }
    render()
  }

  return {
    show(room) {
      if (view.el === null) {
        view.el = $('access-view')
        build(view.el)
      }
      if (room !== view.room) {
        view.room = room
        view.data = null
        $('access-result').hidden = true
        clearErrors()
        status('')
      }
      view.el.hidden = false
      load().catch(() => status('The edge did not answer. Try again in a moment.', 'error'))
    },
    hide() {
      if (view.el !== null) view.el.hidden = true
    },
  }
}
