// Page templates without HTTP: the check at save (core/page-template.ts) accepts what it documents and
// refuses, naming the field and the line, what could break the page or its policy; the style sheet
// origins; the view a template is rendered with (every documented variable) and what a rendering
// writes (escaped, ASCII, inside the edge's shell). The README documents every variable.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { loadConfig } from '../src/config/index.js'
import { AnteroomError } from '../src/core/errors.js'
import { checkTemplate, parseStyleOrigins, STATE_FLAGS, TEMPLATE_STATES, TEMPLATE_VARIABLES } from '../src/core/page-template.js'
import { parseRoomSettings } from '../src/core/settings.js'
import type { VisitorStatus } from '../src/core/visit.js'
import {
  compileTemplate,
  previewPage,
  renderTemplate,
  sampleStatus,
  TEMPLATE_TEXT_KEYS,
  templatedPage,
  templateView,
} from '../src/http/page-templates.js'

const ORIGINS = ['https://cdn.example.com', 'http://127.0.0.1:8765']
const check = (source: string, stylesheet: unknown = null) =>
  checkTemplate({ name: 'shop', source, stylesheet }, { styleOrigins: ORIGINS, texts: TEMPLATE_TEXT_KEYS })

/** The error a template gets: its code, field, line and message. */
function refusal(source: string, stylesheet: unknown = null) {
  try {
    check(source, stylesheet)
  } catch (err) {
    if (!(err instanceof AnteroomError)) throw err
    return { code: err.code, field: err.field, line: err.extra.line, message: err.message }
  }
  throw new Error(`accepted: ${source}`)
}

const GOOD = `<section class="shop {{state}}">
  <h1>{{headline}}</h1>
  {{#hasPlace}}<p>{{t.numbers.position}}: <strong id="position">{{position}}</strong></p>
  <progress id="progress" value="{{progressValue}}" max="{{progressMax}}"></progress>{{/hasPlace}}
  {{#soldOut}}<p class="sold">{{lead}}</p>{{/soldOut}}{{^soldOut}}<p>{{lead}}</p>{{/soldOut}}
  {{#draw}}<a href="{{check}}" title="{{rank}}">{{value}}</a>{{/draw}}
  {{#schedule}}<p data-in="{{countdownSeconds}}">{{countdown}}</p><p>{{schedule.opensAt}}</p>{{/schedule}}
  <!-- a comment without mustache -->
  <p lang="{{lang}}" dir="{{dir}}">{{eta}} {{etaRange}} {{ticket}} {{t.page.refreshes}}</p>
</section>`

describe('the check at save', () => {
  it('accepts a template that uses the documented variables, sections and texts', () => {
    expect(check(GOOD, 'https://cdn.example.com/shop.css?v=2')).toEqual({
      name: 'shop',
      source: GOOD,
      stylesheet: 'https://cdn.example.com/shop.css?v=2',
    })
  })

  it('refuses, naming the field and the line and saying why', () => {
    const cases: [string, number, RegExp][] = [
      ['<p>\n{{{title}}}</p>', 2, /raw HTML; write \{\{title\}\}/],
      ['<p>\n\n{{& title}}</p>', 3, /raw HTML/],
      ['<p>{{titel}}</p>', 1, /\{\{titel\}\} is not a variable of the page/],
      ['<p>\n{{t.numbers.nope}}</p>', 2, /\{\{t.numbers.nope\}\} is not a variable/],
      ['<p>\n{{#paused}}\npaused\n', 2, /the section \{\{#paused\}\} is not closed \(add \{\{\/paused\}\}\)/],
      ['<p>\n{{/paused}}</p>', 2, /\{\{\/paused\}\} closes a section that is not open/],
      ['{{#paused}}\n{{#closed}}\n{{/paused}}{{/closed}}', 3, /the section \{\{#closed\}\} must be closed before this/],
      ['<p>\n\n\n{{title</p>', 4, /a \{\{ is not closed with \}\}/],
      ['{{> header}}', 1, /partials/],
      ['{{=<% %>=}}', 1, /delimiters/],
      ['<div>\n<script>alert(1)</script>', 2, /<script> is not allowed/],
      ['<div>\n<SCRIPT src="x.js"></SCRIPT>', 2, /<script> is not allowed/],
      ['<style>p{}</style>', 1, /<style> is not allowed: inline styles are blocked/],
      ['<link rel="stylesheet" href="https://evil.example/x.css">', 1, /<link> is not allowed/],
      ['<meta http-equiv="refresh" content="0">', 1, /<meta> is not allowed/],
      ['<iframe src="x"></iframe>', 1, /frames are not allowed/],
      ['<p>\n<a href="#" onclick="steal()">x</a>', 2, /inline event handlers \(onclick=\)/],
      ['<img src=x onerror=alert(1)>', 1, /inline event handlers \(onerror=\)/],
      ['<p style="color:red">x</p>', 1, /style= attributes are blocked/],
      ['<a href="javascript:alert(1)">x</a>', 1, /javascript: URLs/],
      // Spellings a browser reads as javascript: all the same: a character reference, a tab in the scheme.
      ['<a href="java&#115;cript:alert(1)">x</a>', 1, /javascript: URLs/],
      ['<a href="java&#X73;cript&colon;alert(1)">x</a>', 1, /javascript: URLs/],
      ['<a href="jav&Tab;ascript:alert(1)">x</a>', 1, /javascript: URLs/],
      ['<a href="jav\tascript:alert(1)">x</a>', 1, /javascript: URLs/],
      // Elements whose content a browser reads as text: "</noscript>" in a value would end one early.
      ['<noscript><p title="</noscript><img src=x onerror=alert(1)>"></p></noscript>', 1, /<noscript> is not allowed/],
      ['<textarea><p title="</textarea><img src=x>"></p></textarea>', 1, /<textarea> is not allowed/],
      ['<xmp>x</xmp>', 1, /<xmp> is not allowed/],
      ['<p {{#paused}}class="p"{{/paused}}>x</p>', 1, /inside an HTML tag must stand in a quoted attribute value/],
      ['<p class="{{#paused}}p{{/paused}}">x</p>', 1, /a section .* may not stand inside an HTML tag/],
      ['<scr{{#paused}}{{/paused}}ipt>', 1, /inside an HTML tag/],
      ['<p>1 < 2</p>', 1, /a < that starts no tag: write &lt;/],
      ['<!-- {{title}} -->', 1, /an HTML comment may not hold/],
      ['<!doctype html><p>x</p>', 1, /the edge writes the page’s shell/],
      ['<p>\n<div class="x"', 2, /an HTML tag is not closed/],
    ]
    for (const [source, line, reason] of cases) {
      const r = refusal(source)
      expect(r, source).toMatchObject({ code: 'ERR_TEMPLATE_INVALID', field: 'source', line })
      expect(r.message, source).toMatch(new RegExp(`^source: line ${line}: `))
      expect(r.message, source).toMatch(reason)
    }
  })

  it('refuses a template over 32,768 characters, an empty one, and a bad name', () => {
    expect(refusal(`<p>${'x'.repeat(32_768)}</p>`)).toMatchObject({
      field: 'source',
      message: expect.stringMatching(/at most 32,768 characters, got 32,775/),
    })
    expect(refusal('   ')).toMatchObject({ field: 'source' })
    expect(() => checkTemplate({ name: 'Shop!', source: '<p>x</p>' }, { styleOrigins: [], texts: [] })).toThrow(/^name: /)
  })

  it('takes a style sheet only from an allowed origin, by an absolute URL a policy can name', () => {
    expect(check('<p>x</p>', 'http://127.0.0.1:8765/a.css').stylesheet).toBe('http://127.0.0.1:8765/a.css')
    expect(check('<p>x</p>', '').stylesheet).toBeNull()
    expect(refusal('<p>x</p>', 'https://evil.example/a.css')).toMatchObject({
      field: 'stylesheet',
      message: expect.stringMatching(
        /its origin https:\/\/evil\.example is not in ANTEROOM_TEMPLATE_STYLE_ORIGINS \(allowed: https:\/\/cdn\.example\.com/,
      ),
    })
    expect(refusal('<p>x</p>', 'http://cdn.example.com/a.css')).toMatchObject({ field: 'stylesheet' })
    expect(refusal('<p>x</p>', '/a.css')).toMatchObject({ field: 'stylesheet', message: expect.stringMatching(/absolute URL/) })
    expect(refusal('<p>x</p>', 'https://cdn.example.com/a;b.css')).toMatchObject({
      field: 'stylesheet',
      message: expect.stringMatching(/Content-Security-Policy/),
    })
    expect(refusal('<p>x</p>', 42)).toMatchObject({ field: 'stylesheet' })
    expect(() =>
      checkTemplate({ name: 'shop', source: '<p>x</p>', stylesheet: 'https://cdn.example.com/a.css' }, { styleOrigins: [], texts: [] }),
    ).toThrow(/none is allowed \(ANTEROOM_TEMPLATE_STYLE_ORIGINS is empty\)/)
  })

  it('reads ANTEROOM_TEMPLATE_STYLE_ORIGINS: https origins, http only on loopback, no paths', () => {
    expect(parseStyleOrigins(undefined)).toEqual([])
    expect(parseStyleOrigins(' https://cdn.example.com , http://127.0.0.1:8080,http://localhost')).toEqual([
      'https://cdn.example.com',
      'http://127.0.0.1:8080',
      'http://localhost',
    ])
    expect(() => parseStyleOrigins('http://cdn.example.com')).toThrow(/must be https/)
    expect(() => parseStyleOrigins('https://cdn.example.com/css')).toThrow(/origin alone/)
    expect(() => parseStyleOrigins('cdn.example.com')).toThrow(/not an origin/)
  })

  it('config names ANTEROOM_TEMPLATE_STYLE_ORIGINS when it is wrong, and takes a list from a file too', () => {
    const rooms = JSON.stringify([{ id: 'r', totalActiveUsers: 1, newUsersPerMinute: 1 }])
    expect(() => loadConfig({ ANTEROOM_ROOMS: rooms, ANTEROOM_TEMPLATE_STYLE_ORIGINS: 'http://cdn.example.com' })).toThrow(
      /^ANTEROOM_TEMPLATE_STYLE_ORIGINS: "http:\/\/cdn\.example\.com" must be https/,
    )
    expect(
      loadConfig({ ANTEROOM_ROOMS: rooms, ANTEROOM_TEMPLATE_STYLE_ORIGINS: 'https://a.example, https://b.example:8443' })
        .templateStyleOrigins,
    ).toEqual(['https://a.example', 'https://b.example:8443'])
    expect(loadConfig({ ANTEROOM_ROOMS: rooms }).templateStyleOrigins).toEqual([])
  })
})

describe('rendering', () => {
  const room = parseRoomSettings({ id: 'sale', paths: ['/'], totalActiveUsers: 1, newUsersPerMinute: 1, title: 'Big <sale> & more' })
  const tpl = compileTemplate({ template: { name: 'shop', source: GOOD, stylesheet: 'https://cdn.example.com/shop.css' }, rev: 3 }, ORIGINS)

  it('gives every documented variable in every state, the state’s flag alone, and t’s texts', () => {
    const documented = TEMPLATE_VARIABLES.map((v) => v.name)
    for (const state of TEMPLATE_STATES) {
      const view = templateView(sampleStatus(state, room), room, 'de')
      const flags = TEMPLATE_STATES.map((s) => STATE_FLAGS[s]).filter((f) => view[f] === true)
      expect(flags, state).toEqual([STATE_FLAGS[state]])
      const missing = documented.filter((name) => !(name in view) && !Object.values(STATE_FLAGS).includes(name))
      expect(missing, state).toEqual([])
    }
    const view = templateView(sampleStatus('queued', room), room, 'de') as { position: string; t: { numbers: { position: string } } }
    expect(view.position).toBe('1.234')
    expect(view.t.numbers.position).toBe('Ihr Platz in der Warteschlange')
  })

  it('escapes every variable and writes ASCII, inside the edge’s shell with the sheet and the script', () => {
    const v = { ...sampleStatus('queued', room), state: 'queued' } as VisitorStatus
    const page = templatedPage(tpl, v, { title: 'Big <sale> & "more"', message: 'm' }, 'ar')
    expect(page).toMatch(/^<!doctype html>\n<html lang="ar" dir="rtl">/)
    expect(page).toContain('<link rel="stylesheet" href="https://cdn.example.com/shop.css">')
    expect(page).toContain('<title>Big &#60;sale&#62; &#38; &#34;more&#34;</title>')
    expect(page).toContain('<h1>Big &#60;sale&#62; &#38; &#34;more&#34;</h1>')
    expect(page).toMatch(/<script src="\/_anteroom\/queue\.js\?v=[0-9a-z]+"><\/script><\/body><\/html>$/)
    expect(page).toContain('<main id="anteroom" data-room="sale" data-state="queued"')
    expect(/^[\t\n\r\x20-\x7e]*$/.test(page)).toBe(true)
    // Sections follow the state: sold out renders its own branch only.
    const sold = renderTemplate(tpl, templateView(sampleStatus('sold_out', room), room, 'en'))
    expect(sold).toContain('<p class="sold">')
    expect(renderTemplate(tpl, templateView(sampleStatus('paused', room), room, 'en'))).not.toContain('class="sold"')
  })

  it('previews a state without the script or the refresh', () => {
    const preview = previewPage(tpl, 'scheduled', { ...room, title: 'T', message: 'M' }, 'ja')
    expect(preview).toContain('data-state="scheduled"')
    expect(preview).not.toContain('<script')
    expect(preview).not.toContain('http-equiv="refresh"')
    expect(preview).toContain('data-in="3600">01:00:00</p>')
  })

  it('drops a style sheet whose origin is no longer allowed, and refuses a source that no longer passes', () => {
    expect(
      compileTemplate({ template: { name: 'shop', source: GOOD, stylesheet: 'https://cdn.example.com/a.css' }, rev: 1 }, []).sheet,
    ).toBeUndefined()
    expect(() => compileTemplate({ template: { name: 'shop', source: '<script></script>', stylesheet: null }, rev: 1 }, [])).toThrow(
      /<script>/,
    )
  })
})

describe('the README', () => {
  it('documents every variable in its table', () => {
    const readme = readFileSync(join(import.meta.dirname, '..', 'README.md'), 'utf8')
    const table = readme.slice(readme.indexOf('| variable | what it holds |'))
    for (const v of TEMPLATE_VARIABLES) expect(table, v.name).toMatch(new RegExp(`\`${v.name}\``))
  })
})
