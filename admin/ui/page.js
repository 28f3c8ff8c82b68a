// Anteroom admin UI: the Page view of a room (admin/templates.ts): the room's language and page
// template, the templates with an editor (a refused save is shown at the line the edge names), the
// variables a template may use, and previews of every state in a chosen language, each in a sandboxed
// frame of the edge's own preview (it runs no script). views.js imports it and lends its helpers.

const STATE_NAMES = {
  queued: 'Queued',
  prequeue: 'Pre-queue',
  scheduled: 'Scheduled',
  paused: 'Paused',
  closed: 'Closed',
  sold_out: 'Sold out',
  challenge: 'Challenge',
  ended: 'Ended',
  busy: 'Busy',
  recovering: 'Recovering',
  all_held: 'All held',
}
const BUILT_IN = ''
const STARTER = `<section class="card">
  <h1>{{headline}}</h1>
  <p>{{lead}}</p>
  {{#hasPlace}}
  <p class="big" id="position">{{position}}</p>
  <p>{{t.numbers.eta}}: <strong id="eta">{{eta}}</strong></p>
  {{/hasPlace}}
  <p class="muted">{{t.page.refreshes}}</p>
</section>
`

/** The audit log's words for a template entry (audit.js asks for entries it does not know); undefined for others. */
export function describePage(e) {
  if (e.action === 'template.create') return `Made the page template “${e.after?.name}”`
  if (e.action === 'template.update') return `Changed the page template “${e.after?.name}”`
  if (e.action === 'template.delete') return `Removed the page template “${e.before?.name}”`
  return undefined
}

/**
 * The Page view. `ui` is what views.js lends it: api(method, path, body, headers), h(tag, attrs,
 * ...children), confirmDialog({ title, text, ok }) and changed(room?) (after a save: the audit log and the
 * rooms reload; `room`, { settings, etag }, when the room's own settings were saved).
 */
export function createPageView(ui) {
  const { api, h, confirmDialog } = ui
  const enc = encodeURIComponent
  const $ = (id) => document.getElementById(id)
  const view = { room: null, el: null, meta: null, templates: [], settings: null, etag: null, editing: null, etagOf: {}, lang: 'en' }

  function status(id, text, kind = 'info') {
    const el = $(id)
    el.textContent = text
    el.className = `save-status ${kind}`
  }

  function build(root) {
    const langs = h('select', { id: 'page-locale', name: 'locale' })
    const template = h('select', { id: 'page-template', name: 'template' })
    const room = h(
      'form',
      { id: 'page-room', class: 'card', novalidate: true, 'aria-labelledby': 'page-room-heading' },
      h('h2', { id: 'page-room-heading' }, 'This room’s page'),
      h(
        'div',
        { class: 'row2' },
        h(
          'div',
          { class: 'field' },
          h('label', { for: 'page-locale' }, 'Language'),
          langs,
          h('p', { class: 'hint' }, 'For visitors whose browser asks for none we have; ?lang= and the browser’s languages come first.'),
          h('p', { class: 'field-error', id: 'page-err-locale' }),
        ),
        h(
          'div',
          { class: 'field' },
          h('label', { for: 'page-template' }, 'Page template'),
          template,
          h('p', { class: 'hint' }, 'The built-in page, or one of the templates below.'),
          h('p', { class: 'field-error', id: 'page-err-template' }),
        ),
      ),
      h(
        'div',
        { class: 'form-foot' },
        h('button', { type: 'submit', id: 'page-room-save', class: 'primary' }, 'Save'),
        h('p', { id: 'page-room-status', class: 'save-status', role: 'status', 'aria-live': 'polite' }),
      ),
    )
    room.addEventListener('submit', (event) => {
      event.preventDefault()
      void saveRoom()
    })

    const source = h('textarea', {
      id: 'tpl-source',
      name: 'source',
      spellcheck: 'false',
      rows: 16,
      wrap: 'off',
      'aria-describedby': 'tpl-err-source',
      autocapitalize: 'off',
    })
    const editor = h(
      'form',
      { id: 'tpl-editor', class: 'card tpl-editor', novalidate: true, 'aria-labelledby': 'tpl-editor-heading' },
      h(
        'div',
        { class: 'card-head' },
        h('h2', { id: 'tpl-editor-heading' }, 'Template'),
        h('span', { id: 'tpl-rev', class: 'muted small' }),
      ),
      h(
        'div',
        { class: 'row2' },
        h(
          'div',
          { class: 'field' },
          h('label', { for: 'tpl-name' }, 'Name'),
          h('input', {
            id: 'tpl-name',
            name: 'name',
            type: 'text',
            maxlength: 64,
            spellcheck: 'false',
            autocomplete: 'off',
            placeholder: 'spring-sale',
          }),
          h('p', { class: 'field-error', id: 'tpl-err-name' }),
        ),
        h(
          'div',
          { class: 'field' },
          h('label', { for: 'tpl-stylesheet' }, 'Style sheet'),
          h('input', {
            id: 'tpl-stylesheet',
            name: 'stylesheet',
            type: 'url',
            spellcheck: 'false',
            autocomplete: 'off',
            placeholder: 'https://cdn.example.com/waiting-room.css',
            'aria-describedby': 'tpl-sheet-hint tpl-err-stylesheet',
          }),
          h('p', { class: 'hint', id: 'tpl-sheet-hint' }),
          h('p', { class: 'field-error', id: 'tpl-err-stylesheet' }),
        ),
      ),
      h(
        'div',
        { class: 'field' },
        h('label', { for: 'tpl-source' }, 'Source (mustache; every {{variable}} is escaped)'),
        h('div', { class: 'tpl-code' }, h('ol', { id: 'tpl-gutter', class: 'tpl-gutter', 'aria-hidden': 'true' }), source),
        h('p', { class: 'field-error', id: 'tpl-err-source', role: 'alert' }),
      ),
      h(
        'div',
        { class: 'form-foot' },
        h('button', { type: 'submit', id: 'tpl-save', class: 'primary' }, 'Save template'),
        h('button', { type: 'button', id: 'tpl-new', class: 'ghost' }, 'New template'),
        h('button', { type: 'button', id: 'tpl-delete', class: 'danger-outline' }, 'Remove'),
        h('p', { id: 'tpl-status', class: 'save-status', role: 'status', 'aria-live': 'polite' }),
      ),
    )
    editor.addEventListener('submit', (event) => {
      event.preventDefault()
      void saveTemplate()
    })
    editor.addEventListener('input', (event) => {
      const err = $(`tpl-err-${event.target.name}`)
      if (err) err.textContent = ''
      event.target.removeAttribute('aria-invalid')
      if (event.target === source) renderGutter()
    })
    source.addEventListener('scroll', () => {
      $('tpl-gutter').scrollTop = source.scrollTop
    })

    const previewLang = h('select', { id: 'preview-lang', 'aria-label': 'Language of the previews' })
    previewLang.addEventListener('change', () => {
      view.lang = previewLang.value
      renderPreviews()
    })
    root.replaceChildren(
      h(
        'div',
        { class: 'report-head' },
        h(
          'div',
          {},
          h('h2', { class: 'report-title' }, 'Page: language and template'),
          h('p', { class: 'muted small', id: 'page-span' }, ''),
        ),
        h('div', { class: 'report-tools' }, h('button', { type: 'button', id: 'page-refresh', class: 'ghost' }, 'Refresh')),
      ),
      h(
        'div',
        { class: 'page-grid' },
        room,
        h(
          'section',
          { class: 'card', 'aria-labelledby': 'tpl-list-heading' },
          h('div', { class: 'card-head' }, h('h2', { id: 'tpl-list-heading' }, 'Templates')),
          h('ul', { id: 'tpl-list', class: 'tpl-list' }),
        ),
      ),
      h(
        'div',
        { class: 'page-grid page-grid-editor' },
        editor,
        h(
          'section',
          { class: 'card tpl-vars', 'aria-labelledby': 'tpl-vars-heading' },
          h('div', { class: 'card-head' }, h('h2', { id: 'tpl-vars-heading' }, 'Variables')),
          h('div', { id: 'tpl-vars', class: 'table-wrap' }),
        ),
      ),
      h(
        'section',
        { class: 'card', 'aria-labelledby': 'preview-heading' },
        h('div', { class: 'card-head' }, h('h2', { id: 'preview-heading' }, 'Previews'), h('div', { class: 'report-tools' }, previewLang)),
        h('p', { class: 'muted small', id: 'preview-of' }),
        h('div', { id: 'previews', class: 'tpl-previews' }),
      ),
    )
    $('page-refresh').addEventListener('click', () => void load())
    $('tpl-new').addEventListener('click', () => edit(null))
    $('tpl-delete').addEventListener('click', () => void removeTemplate())
  }

  function renderGutter() {
    const lines = $('tpl-source').value.split('\n').length
    const gutter = $('tpl-gutter')
    const bad = Number(gutter.dataset.bad ?? 0)
    gutter.replaceChildren(...Array.from({ length: lines }, (_, i) => h('li', { class: i + 1 === bad ? 'bad' : null }, String(i + 1))))
  }

  /** Shows a refusal next to its field; for the source, at its line: the line is marked and selected. */
  function fieldError(prefix, field, message, line) {
    const err = $(`${prefix}-err-${field}`)
    if (err === null) return false
    err.textContent = message.replace(/^[a-z]+: /, '')
    const control = $(`${prefix}-${field}`)
    control?.setAttribute('aria-invalid', 'true')
    if (field === 'source' && line) {
      const gutter = $('tpl-gutter')
      gutter.dataset.bad = String(line)
      renderGutter()
      const text = control.value
      let start = 0
      for (let i = 1; i < line; i++) start = text.indexOf('\n', start) + 1
      const end = text.indexOf('\n', start)
      control.focus()
      control.setSelectionRange(start, end < 0 ? text.length : end)
      control.scrollTop = Math.max(0, (line - 3) * 20)
    } else control?.focus()
    return true
  }

  function clearErrors() {
    for (const id of ['tpl-err-name', 'tpl-err-source', 'tpl-err-stylesheet', 'page-err-locale', 'page-err-template'])
      $(id).textContent = ''
    for (const id of ['tpl-name', 'tpl-source', 'tpl-stylesheet']) $(id).removeAttribute('aria-invalid')
    delete $('tpl-gutter').dataset.bad
  }

  async function load() {
    const room = view.room
    const [meta, list, settings] = await Promise.all([
      view.meta ? Promise.resolve({ ok: true, data: view.meta }) : api('GET', '/template-variables'),
      api('GET', '/templates'),
      api('GET', `/rooms/${enc(room)}`),
    ])
    if (room !== view.room) return
    if (!meta.ok || !list.ok || !settings.ok) {
      status('tpl-status', 'The edge did not answer. Try again in a moment.', 'error')
      return
    }
    view.meta = meta.data
    view.templates = list.data.templates
    view.settings = settings.data.settings
    view.etag = settings.data.etag
    for (const t of view.templates) view.etagOf[t.template.name] = t.etag
    render()
  }

  function render() {
    const { meta, settings } = view
    $('page-span').textContent =
      `${view.templates.length} template${view.templates.length === 1 ? '' : 's'}; style sheets from ${meta.styleOrigins.length ? meta.styleOrigins.join(', ') : 'nowhere (ANTEROOM_TEMPLATE_STYLE_ORIGINS is empty)'}`
    $('tpl-sheet-hint').textContent = meta.styleOrigins.length
      ? `From ${meta.styleOrigins.join(' or ')}; empty: the edge’s own styles only.`
      : 'No origin is allowed: set ANTEROOM_TEMPLATE_STYLE_ORIGINS.'
    const locale = $('page-locale')
    locale.replaceChildren(...meta.locales.map((l) => h('option', { value: l.tag }, `${l.name} (${l.tag})`)))
    locale.value = settings.locale
    const template = $('page-template')
    template.replaceChildren(
      h('option', { value: BUILT_IN }, 'The built-in page'),
      ...view.templates.map((t) => h('option', { value: t.template.name }, t.template.name)),
    )
    template.value = settings.template ?? BUILT_IN
    const previewLang = $('preview-lang')
    previewLang.replaceChildren(...meta.locales.map((l) => h('option', { value: l.tag }, `${l.name} (${l.tag})`)))
    previewLang.value = view.lang
    renderList()
    renderVariables()
    if (view.editing === null) edit(settings.template ?? view.templates[0]?.template.name ?? null, false)
    else renderPreviews()
  }

  function renderList() {
    const items = view.templates.map((t) =>
      h(
        'li',
        {},
        (() => {
          const b = h(
            'button',
            {
              type: 'button',
              class: 'link',
              'data-template': t.template.name,
              'aria-current': t.template.name === view.editing ? 'true' : null,
            },
            t.template.name,
          )
          b.addEventListener('click', () => edit(t.template.name))
          return b
        })(),
        ' ',
        h('span', { class: 'muted small' }, t.rooms.length ? `used by ${t.rooms.join(', ')}` : 'not used'),
      ),
    )
    if (items.length === 0) items.push(h('li', { class: 'muted' }, 'None yet: write one in the editor and save it.'))
    $('tpl-list').replaceChildren(...items)
  }

  function renderVariables() {
    const rows = view.meta.variables.map((v) =>
      h(
        'tr',
        {},
        h('td', {}, h('code', {}, v.kind === 'flag' ? `{{#${v.name}}}` : `{{${v.name}}}`)),
        h(
          'td',
          {},
          v.what,
          v.name === 't'
            ? h(
                'details',
                {},
                h('summary', {}, `${v.keys.length} texts`),
                h('p', { class: 'small' }, v.keys.map((k) => `t.${k}`).join(', ')),
              )
            : null,
        ),
      ),
    )
    $('tpl-vars').replaceChildren(
      h(
        'table',
        { class: 'audit tpl-vars-table' },
        h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Variable'), h('th', { scope: 'col' }, 'What it holds'))),
        h('tbody', {}, ...rows),
      ),
    )
  }

  /** Opens a template in the editor (null: a new one, with a starting point). */
  function edit(name, focus = true) {
    clearErrors()
    const t = view.templates.find((x) => x.template.name === name)?.template
    view.editing = t ? t.name : null
    $('tpl-name').value = t?.name ?? ''
    $('tpl-name').readOnly = t !== undefined
    $('tpl-source').value = t?.source ?? STARTER
    $('tpl-stylesheet').value = t?.stylesheet ?? ''
    $('tpl-rev').textContent = t ? `revision ${/\d+/.exec(view.etagOf[t.name])?.[0]}` : 'new'
    $('tpl-delete').hidden = t === undefined
    status('tpl-status', '')
    renderGutter()
    renderList()
    renderPreviews()
    if (focus) $(t ? 'tpl-source' : 'tpl-name').focus()
  }

  /** A frame per state: the template being edited (as saved), or the room's page when it is new. */
  function renderPreviews() {
    const name = view.editing
    $('preview-of').textContent = name
      ? `The template “${name}” as saved, with sample values and this room’s words.`
      : `This room’s page as its visitors see it now (${view.settings?.template ?? 'built-in'}), with sample values.`
    const frames = view.meta.states.map(({ state }) => {
      const src = name
        ? `/_anteroom/api/templates/${enc(name)}/preview?state=${state}&lang=${view.lang}&room=${enc(view.room)}`
        : `/_anteroom/api/rooms/${enc(view.room)}/preview?state=${state}&lang=${view.lang}`
      return h(
        'figure',
        { class: 'tpl-preview', 'data-state': state },
        h('iframe', { src, title: `Preview: ${STATE_NAMES[state] ?? state}`, sandbox: '', referrerpolicy: 'no-referrer' }),
        h('figcaption', {}, h('a', { href: src, target: '_blank', rel: 'noopener' }, STATE_NAMES[state] ?? state)),
      )
    })
    $('previews').replaceChildren(...frames)
  }

  async function saveTemplate() {
    clearErrors()
    const name = $('tpl-name').value.trim()
    if (name === '') {
      fieldError('tpl', 'name', 'Give the template a name: lower-case letters, digits and dashes.')
      return
    }
    const creating = view.editing === null
    const body = { source: $('tpl-source').value, stylesheet: $('tpl-stylesheet').value.trim() || null }
    const headers = creating ? { 'if-none-match': '*' } : { 'if-match': view.etagOf[name] }
    status('tpl-status', 'Saving…')
    const r = await api('PUT', `/templates/${enc(name)}`, body, headers)
    const error = r.data?.error
    if (r.ok) {
      view.editing = name
      status('tpl-status', `Saved: ${name}, ${creating ? 'made' : 'changed'} (every edge uses it within a second).`, 'ok')
      ui.changed()
      await load()
      edit(name, false)
      status('tpl-status', `Saved: ${name}.`, 'ok')
    } else if (r.status === 400 && error?.field && fieldError('tpl', error.field, error.message, error.line)) {
      status(
        'tpl-status',
        `Not saved: ${error.line ? `line ${error.line}: ` : ''}${error.message.replace(/^[a-z]+: (line \d+: )?/, '')}`,
        'error',
      )
    } else if (r.status === 412) {
      status(
        'tpl-status',
        creating
          ? `Not saved: a template called ${name} exists already.`
          : 'Not saved: someone else changed this template first. Reload it to see theirs.',
        'error',
      )
    } else status('tpl-status', `Not saved: ${error?.message ?? `HTTP ${r.status}`}`, 'error')
  }

  async function removeTemplate() {
    const name = view.editing
    if (name === null) return
    const ok = await confirmDialog({
      title: `Remove ${name}?`,
      text: 'The template goes for good. A room that uses it must choose another first.',
      ok: 'Remove',
    })
    if (!ok) return
    const r = await api('DELETE', `/templates/${enc(name)}`, undefined, { 'if-match': view.etagOf[name] })
    if (r.ok) {
      view.editing = null
      ui.changed()
      await load()
      status('tpl-status', `Removed ${name}.`, 'ok')
    } else status('tpl-status', `Not removed: ${r.data?.error?.message ?? `HTTP ${r.status}`}`, 'error')
  }

  /** The room's language and template, saved as any settings change is (If-Match on its revision). */
  async function saveRoom() {
    clearErrors()
    const patch = { locale: $('page-locale').value, template: $('page-template').value || null }
    status('page-room-status', 'Saving…')
    const r = await api('PATCH', `/rooms/${enc(view.room)}`, patch, { 'if-match': view.etag })
    if (r.ok) {
      view.settings = r.data.settings
      view.etag = r.data.etag
      status('page-room-status', `Saved: ${patch.locale}, ${patch.template ?? 'the built-in page'}.`, 'ok')
      ui.changed({ settings: r.data.settings, etag: r.data.etag })
      await load()
    } else if (r.status === 400 && r.data?.error?.field && fieldError('page', r.data.error.field, r.data.error.message)) {
      status('page-room-status', `Not saved: ${r.data.error.message}`, 'error')
    } else if (r.status === 412) {
      status('page-room-status', 'Not saved: someone else changed this room first. Refresh to see their settings.', 'error')
    } else status('page-room-status', `Not saved: ${r.data?.error?.message ?? `HTTP ${r.status}`}`, 'error')
  }

  return {
    show(room) {
      if (view.el === null) {
        view.el = $('page-view')
        build(view.el)
      }
      if (room !== view.room) {
        view.room = room
        view.editing = null
      }
      view.el.hidden = false
      load().catch(() => status('tpl-status', 'The edge did not answer. Try again in a moment.', 'error'))
    },
    hide() {
      if (view.el !== null) view.el.hidden = true
    },
  }
}
