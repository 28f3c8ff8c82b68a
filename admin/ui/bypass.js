// Anteroom admin UI: the Bypass & checks view of a room, from /api/rooms/:id/bypass (admin/bypass.ts):
// its bypass rules (who skips the line: a client network, a secret header, a path, a verified crawler)
// with what each let past on this edge, a form to add or change one (a refused value is told next to
// its field), removal after a confirmation; the human check's two settings (changed as any setting,
// with the room's ETag) and its counts by outcome; and the crawler checks. views.js imports it and lends
// its helpers. No secret is ever shown here: a header rule names one of ANTEROOM_BYPASS_SECRETS.

const KIND_NAMES = { cidr: 'Client network', header: 'Secret header', path: 'Path', crawler: 'Search crawler' }
const KIND_HELP = {
  cidr: 'The client’s address as the edge sees it (never X-Forwarded-For): one block per line, like 192.0.2.0/24 or 2001:db8::/32.',
  header: 'Requests that send Anteroom-Bypass with this secret. The secret itself is set in ANTEROOM_BYPASS_SECRETS.',
  path: 'Paths of this room, one per line, in canonical form (like /tickets/static): every path under one skips the line.',
  crawler: 'A crawler whose address reverse and forward DNS confirm; its User-Agent alone gets nothing.',
}
/** The rule form's fields: an error's field (networks[2]) is shown at its base name's box. */
const FIELDS = ['id', 'kind', 'networks', 'secret', 'paths', 'crawlers']
const OUTCOMES = [
  ['asked', 'Shown the check'],
  ['passed', 'Passed'],
  ['failed', 'Failed (shadow lane)'],
  ['error', 'Siteverify errors'],
  ['timeout', 'Siteverify timeouts'],
]

/** What a rule lets past, in a few words. */
function ruleWhat(rule) {
  switch (rule.kind) {
    case 'cidr':
      return rule.networks.join(', ')
    case 'header':
      return `Anteroom-Bypass with the secret ${rule.secret}`
    case 'path':
      return rule.paths.join(', ')
    case 'crawler':
      return rule.crawlers.join(', ')
    default:
      return ''
  }
}

/** The audit log's words for a bypass entry (audit.js asks for entries it does not know); undefined for others. */
export function describeBypass(e) {
  const r = e.after ?? e.before ?? {}
  const what = `${KIND_NAMES[r.kind] ?? r.kind} rule ${r.id}`
  if (e.action === 'bypass.add') return `Added the ${what} (${ruleWhat(r)})`
  if (e.action === 'bypass.update') return `Changed the ${what} (${ruleWhat(e.before ?? {})} → ${ruleWhat(r)})`
  if (e.action === 'bypass.remove') return `Removed the ${what}`
  return undefined
}

/**
 * The Bypass & checks view. `ui` is what views.js lends it: api(method, path, body, headers), h(tag,
 * attrs, ...children), fmt(n), confirmDialog({ title, text, ok }) and changed() (after a change: the
 * audit log and the room reload).
 */
export function createBypassView(ui) {
  const { api, h, fmt, confirmDialog } = ui
  const view = { room: null, el: null, data: null, editing: null, busy: false, loading: 0 }
  const $ = (id) => document.getElementById(id)
  const enc = encodeURIComponent

  function field(name, label, control, hint) {
    return h(
      'div',
      { class: 'field', id: `bypass-field-${name}` },
      h('label', { for: `bypass-${name}` }, label),
      control,
      hint ? h('p', { class: 'hint', id: `bypass-${name}-hint` }, hint) : null,
      h('p', { class: 'field-error', id: `bypass-err-${name}`, role: 'alert' }),
    )
  }

  function build(root) {
    const kind = h(
      'select',
      { id: 'bypass-kind', name: 'kind', 'aria-describedby': 'bypass-kind-hint' },
      ...Object.entries(KIND_NAMES).map(([k, label]) => h('option', { value: k }, label)),
    )
    const form = h(
      'form',
      { id: 'bypass-form', class: 'card bypass-form', novalidate: true, 'aria-labelledby': 'bypass-form-heading' },
      h('h2', { id: 'bypass-form-heading' }, 'Add a rule'),
      h(
        'div',
        { class: 'row2' },
        field(
          'id',
          'Rule id',
          h('input', { id: 'bypass-id', name: 'id', type: 'text', maxlength: 32, placeholder: 'partner-office', spellcheck: 'false' }),
          'Lower-case letters, digits and dashes: it names the rule in the admission, the metrics and the log',
        ),
        field('kind', 'Kind', kind, KIND_HELP.cidr),
      ),
      field(
        'networks',
        'Networks',
        h('textarea', { id: 'bypass-networks', name: 'networks', rows: 3, spellcheck: 'false', placeholder: '192.0.2.0/24' }),
      ),
      field('secret', 'Secret', h('select', { id: 'bypass-secret', name: 'secret' })),
      field(
        'paths',
        'Paths',
        h('textarea', { id: 'bypass-paths', name: 'paths', rows: 2, spellcheck: 'false', placeholder: '/tickets/static' }),
      ),
      h(
        'fieldset',
        { id: 'bypass-field-crawlers', class: 'field bypass-crawlers' },
        h('legend', { class: 'group-label' }, 'Crawlers'),
        h('div', { id: 'bypass-crawlers', class: 'bypass-crawler-list' }),
        h('p', { class: 'field-error', id: 'bypass-err-crawlers', role: 'alert' }),
      ),
      h(
        'div',
        { class: 'form-foot' },
        h('button', { type: 'submit', id: 'bypass-save', class: 'primary' }, 'Add the rule'),
        h('button', { type: 'button', id: 'bypass-cancel', class: 'ghost', hidden: true }, 'Cancel'),
        h('p', { id: 'bypass-status', class: 'save-status', role: 'status', 'aria-live': 'polite' }),
      ),
    )
    form.addEventListener('submit', (event) => {
      event.preventDefault()
      void save()
    })
    form.addEventListener('change', (event) => {
      if (event.target.name === 'kind') renderKind()
    })
    form.addEventListener('input', (event) => {
      const base = String(event.target.name).split('.')[0]
      const err = $(`bypass-err-${base}`)
      if (err) err.textContent = ''
      event.target.removeAttribute('aria-invalid')
    })
    const human = h(
      'form',
      { id: 'hc-form', class: 'card', novalidate: true, 'aria-labelledby': 'hc-heading' },
      h(
        'div',
        { class: 'card-head' },
        h('h2', { id: 'hc-heading' }, 'Human check'),
        h('span', { class: 'muted small', id: 'hc-provider' }),
      ),
      h(
        'div',
        {},
        h(
          'div',
          { class: 'field' },
          h('label', { for: 'hc-mode' }, 'Before a place'),
          h(
            'select',
            { id: 'hc-mode', name: 'humanCheck' },
            h('option', { value: 'off' }, 'No check'),
            h('option', { value: 'turnstile' }, 'Turnstile-compatible check'),
          ),
          h('p', { class: 'field-error', id: 'hc-err-humanCheck', role: 'alert' }),
        ),
        h(
          'div',
          { class: 'field' },
          h('label', { for: 'hc-onerror' }, 'If the check cannot be made'),
          h(
            'select',
            { id: 'hc-onerror', name: 'humanCheckOnError' },
            h('option', { value: 'closed' }, 'Hold newcomers'),
            h('option', { value: 'open' }, 'Let them join unchecked'),
          ),
          h('p', { class: 'field-error', id: 'hc-err-humanCheckOnError', role: 'alert' }),
        ),
      ),
      h(
        'p',
        { class: 'muted small' },
        'Who fails the check waits in a shadow lane: a queue page like everyone’s, never admitted, at no cost to the store.',
      ),
      h(
        'dl',
        { class: 'defence', id: 'hc-counts' },
        ...OUTCOMES.map(([k, label]) => h('div', {}, h('dt', {}, label), h('dd', { id: `hc-count-${k}` }, '–'))),
        h('div', {}, h('dt', {}, 'Shadow-lane visits'), h('dd', { id: 'hc-count-shadow' }, '–')),
      ),
      h(
        'div',
        { class: 'form-foot' },
        h('button', { type: 'submit', id: 'hc-save', class: 'primary' }, 'Save'),
        h('p', { id: 'hc-status', class: 'save-status', role: 'status', 'aria-live': 'polite' }),
      ),
    )
    human.addEventListener('submit', (event) => {
      event.preventDefault()
      void saveHumanCheck()
    })
    root.replaceChildren(
      h(
        'div',
        { class: 'report-head' },
        h('div', {}, h('h2', { class: 'report-title' }, 'Bypass & checks'), h('p', { class: 'muted small', id: 'bypass-span' }, '')),
        h('div', { class: 'report-tools' }, h('button', { type: 'button', id: 'bypass-refresh', class: 'ghost' }, 'Refresh')),
      ),
      h(
        'section',
        { class: 'card', 'aria-labelledby': 'bypass-list-heading' },
        h(
          'div',
          { class: 'card-head' },
          h('h2', { id: 'bypass-list-heading' }, 'Bypass rules'),
          h('span', { class: 'muted small' }, 'let past: this edge, since it started'),
        ),
        h(
          'div',
          { class: 'table-wrap' },
          h(
            'table',
            { class: 'bypass-table' },
            h('thead', {}, h('tr', {}, ...['Rule', 'Kind', 'What it lets past', 'Let past', ''].map((t) => h('th', { scope: 'col' }, t)))),
            h('tbody', { id: 'bypass-rows' }),
          ),
        ),
      ),
      h('div', { class: 'access-grid' }, form, human),
      h(
        'section',
        { class: 'card', 'aria-labelledby': 'crawler-heading' },
        h(
          'div',
          { class: 'card-head' },
          h('h2', { id: 'crawler-heading' }, 'Crawler checks'),
          h('span', { class: 'muted small' }, 'this edge, all rooms'),
        ),
        h(
          'dl',
          { class: 'defence', id: 'crawler-counts' },
          ...['verified', 'refused', 'error'].map((o) =>
            h('div', {}, h('dt', {}, `${o[0].toUpperCase()}${o.slice(1)} (DNS lookups)`), h('dd', { id: `crawler-${o}` }, '–')),
          ),
        ),
      ),
    )
    $('bypass-refresh').addEventListener('click', () => void load())
    $('bypass-cancel').addEventListener('click', () => startEdit(null))
    renderKind()
  }

  function renderKind() {
    const kind = $('bypass-kind').value
    for (const [name, k] of [
      ['networks', 'cidr'],
      ['secret', 'header'],
      ['paths', 'path'],
      ['crawlers', 'crawler'],
    ])
      $(`bypass-field-${name}`).hidden = kind !== k
    $('bypass-kind-hint').textContent = KIND_HELP[kind] ?? ''
  }

  function status(id, text, kind = 'info') {
    const el = $(id)
    el.textContent = text
    el.className = `save-status ${kind}`
  }

  function clearErrors() {
    for (const f of FIELDS) $(`bypass-err-${f}`).textContent = ''
    for (const el of $('bypass-form').querySelectorAll('[aria-invalid]')) el.removeAttribute('aria-invalid')
  }

  /** Shows the edge's message next to the field it names (networks[1] at Networks); false if none of the form's. */
  function fieldError(field, message) {
    const base = String(field ?? '').split(/[[.]/)[0]
    if (!FIELDS.includes(base)) return false
    let text = message.replace(/^[A-Za-z]+(\[\d+\])?: /, '')
    text = text.charAt(0).toUpperCase() + text.slice(1)
    if (!/[.!?)]$/.test(text)) text += '.'
    $(`bypass-err-${base}`).textContent = text
    const control = base === 'crawlers' ? $('bypass-crawlers').querySelector('input') : $(`bypass-${base}`)
    control?.setAttribute('aria-invalid', 'true')
    control?.focus()
    return true
  }

  const lines = (id) =>
    $(id)
      .value.split(/[\n,]/)
      .map((s) => s.trim())
      .filter((s) => s !== '')

  /** The rule the form says (the edge checks it, naming the bad field). */
  function ruleOfForm() {
    const kind = $('bypass-kind').value
    const rule = { id: $('bypass-id').value.trim(), kind }
    if (kind === 'cidr') rule.networks = lines('bypass-networks')
    if (kind === 'header') rule.secret = $('bypass-secret').value
    if (kind === 'path') rule.paths = lines('bypass-paths')
    if (kind === 'crawler') rule.crawlers = [...$('bypass-crawlers').querySelectorAll('input:checked')].map((i) => i.value)
    return rule
  }

  /** Fills the form with a rule to change (its id fixed), or empties it to add one. */
  function startEdit(rule) {
    view.editing = rule?.id ?? null
    clearErrors()
    $('bypass-form-heading').textContent = rule ? `Change the rule ${rule.id}` : 'Add a rule'
    $('bypass-save').textContent = rule ? 'Save the rule' : 'Add the rule'
    $('bypass-cancel').hidden = rule === null
    $('bypass-id').value = rule?.id ?? ''
    $('bypass-id').readOnly = rule !== null
    $('bypass-kind').value = rule?.kind ?? 'cidr'
    $('bypass-networks').value = rule?.kind === 'cidr' ? rule.networks.join('\n') : ''
    $('bypass-paths').value = rule?.kind === 'path' ? rule.paths.join('\n') : ''
    if (rule?.kind === 'header') $('bypass-secret').value = rule.secret
    for (const input of $('bypass-crawlers').querySelectorAll('input'))
      input.checked = rule?.kind === 'crawler' && rule.crawlers.includes(input.value)
    renderKind()
    if (rule) $('bypass-kind').focus()
  }

  async function save() {
    if (view.busy || view.room === null) return
    clearErrors()
    const room = view.room
    const rule = ruleOfForm()
    const editing = view.editing
    view.busy = true
    $('bypass-save').disabled = true
    status('bypass-status', 'Saving…')
    try {
      const r = editing
        ? await api('PUT', `/rooms/${enc(room)}/bypass/rules/${enc(editing)}`, rule)
        : await api('POST', `/rooms/${enc(room)}/bypass/rules`, rule)
      if (room !== view.room) return
      if (r.ok) {
        status('bypass-status', editing ? `Saved the rule ${editing}.` : `Added the rule ${rule.id}.`, 'ok')
        startEdit(null)
        await load()
        ui.changed?.()
      } else if (r.status === 400 && fieldError(r.data?.error?.field, r.data?.error?.message ?? 'is not valid')) {
        status('bypass-status', `Not saved: ${r.data.error.message}`, 'error')
      } else status('bypass-status', `Not saved: ${r.data?.error?.message ?? `the edge answered ${r.status}`}`, 'error')
    } catch {
      status('bypass-status', 'The edge did not answer; nothing was saved. Try again.', 'error')
    } finally {
      view.busy = false
      $('bypass-save').disabled = false
    }
  }

  async function remove(rule) {
    const ok = await confirmDialog({
      title: `Remove the rule ${rule.id}?`,
      text: `${KIND_NAMES[rule.kind]}: ${ruleWhat(rule)}. From now on, on every edge within a second, these requests wait in line like anyone’s.`,
      ok: 'Remove',
    })
    if (!ok) return status('bypass-status', 'Nothing was removed.')
    const r = await api('DELETE', `/rooms/${enc(view.room)}/bypass/rules/${enc(rule.id)}`)
    if (!r.ok) return status('bypass-status', `Not removed: ${r.data?.error?.message ?? r.status}`, 'error')
    status('bypass-status', `Removed the rule ${rule.id}.`, 'ok')
    if (view.editing === rule.id) startEdit(null)
    await load()
    ui.changed?.()
  }

  /** The human check's settings, as any setting: PATCH with the room's ETag; a refusal names its field. */
  async function saveHumanCheck() {
    const room = view.room
    if (room === null) return
    for (const f of ['humanCheck', 'humanCheckOnError']) $(`hc-err-${f}`).textContent = ''
    status('hc-status', 'Saving…')
    const body = { humanCheck: $('hc-mode').value, humanCheckOnError: $('hc-onerror').value }
    const r = await api('PATCH', `/rooms/${enc(room)}`, body, { 'if-match': view.data?.etag ?? '' })
    if (room !== view.room) return
    if (r.ok) {
      status('hc-status', 'Saved.', 'ok')
      await load()
      ui.changed?.()
      return
    }
    const field = r.data?.error?.field
    if (r.status === 400 && (field === 'humanCheck' || field === 'humanCheckOnError')) {
      $(`hc-err-${field}`).textContent = r.data.error.message.replace(/^[A-Za-z]+: /, '')
    }
    status(
      'hc-status',
      r.status === 412
        ? 'Someone else changed this room first: it is shown as it is now.'
        : `Not saved: ${r.data?.error?.message ?? r.status}`,
      'error',
    )
    if (r.status === 412) await load()
  }

  function render() {
    const d = view.data
    if (d === null) return
    $('bypass-span').textContent = `${fmt(d.rules.length)} rule${d.rules.length === 1 ? '' : 's'} in ${d.room}`
    const rows = d.rules.map((rule) => {
      const edit = h('button', { type: 'button', class: 'ghost', 'data-edit': rule.id }, 'Change')
      edit.addEventListener('click', () => startEdit(rule))
      const del = h('button', { type: 'button', class: 'danger-outline', 'data-remove': rule.id }, 'Remove')
      del.addEventListener('click', () => void remove(rule))
      return h(
        'tr',
        { 'data-rule': rule.id },
        h('td', {}, h('code', {}, rule.id)),
        h('td', {}, KIND_NAMES[rule.kind] ?? rule.kind),
        h('td', { class: 'bypass-what' }, ruleWhat(rule)),
        h('td', { class: 'nowrap', 'data-count': rule.id }, fmt(d.counts.rules[rule.id] ?? 0)),
        h('td', { class: 'nowrap' }, edit, ' ', del),
      )
    })
    if (rows.length === 0) rows.push(h('tr', {}, h('td', { colspan: 5, class: 'muted' }, 'No rules: everyone goes through the line.')))
    $('bypass-rows').replaceChildren(...rows)
    // The secrets a header rule may name, and the crawlers a crawler rule may.
    const secret = $('bypass-secret')
    const chosen = secret.value
    secret.replaceChildren(
      ...(d.secrets.length === 0
        ? [h('option', { value: '' }, 'None configured (ANTEROOM_BYPASS_SECRETS)')]
        : d.secrets.map((s) => h('option', { value: s }, s))),
    )
    if (d.secrets.includes(chosen)) secret.value = chosen
    const list = $('bypass-crawlers')
    if (list.childElementCount === 0) {
      list.replaceChildren(
        ...d.crawlers.map((c) =>
          h(
            'label',
            { title: c.domains.join(', ') },
            h('input', { type: 'checkbox', name: 'crawlers', value: c.name, id: `bypass-crawler-${c.name}` }),
            ` ${c.label}`,
          ),
        ),
      )
    }
    const hc = d.humanCheck
    $('hc-mode').value = hc.mode
    $('hc-onerror').value = hc.onError
    $('hc-provider').textContent = hc.provider
      ? `provider: site key ${hc.provider.siteKey}`
      : 'no provider on this edge (ANTEROOM_HUMAN_CHECK_*)'
    for (const [k] of OUTCOMES) $(`hc-count-${k}`).textContent = fmt(d.counts.humanCheck[k])
    $('hc-count-shadow').textContent = fmt(d.counts.shadowVisits)
    for (const o of ['verified', 'refused', 'error'])
      $(`crawler-${o}`).textContent = `${fmt(d.counts.crawlerChecks[o])} (${fmt(d.counts.crawlerLookups[o])})`
  }

  async function load() {
    const room = view.room
    if (room === null) return
    const ticket = ++view.loading
    const r = await api('GET', `/rooms/${enc(room)}/bypass`)
    if (ticket !== view.loading || room !== view.room) return
    if (!r.ok) {
      $('bypass-span').textContent = `Could not load: ${r.data?.error?.message ?? r.status}`
      return
    }
    view.data = r.data
    render()
  }

  return {
    show(room) {
      const root = $('bypass-view')
      if (view.el !== root) {
        view.el = root
        build(root)
      }
      root.hidden = false
      if (view.room !== room) {
        view.room = room
        view.data = null
        startEdit(null)
      }
      void load()
    },
    hide() {
      const root = $('bypass-view')
      if (root) root.hidden = true
    },
  }
}
