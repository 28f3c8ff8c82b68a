// The queue page's part for access codes (core/access.ts): in a room that takes them, a small form
// "Have an access code?" under the numbers, which sends what is typed as ?code= to the same page (a
// plain GET form: no script, and the page's CSP allows forms to 'self'); and, for a visitor whose
// place is in a lane, a line that says which. Every word a visitor reads of it is one of the
// catalogues' access.* and lane.* texts (src/http/locales/), written in the page's language.
import type { Lane } from '../core/access.js'
import type { VisitorStatus } from '../core/visit.js'
import type { MessageKey } from './locales/en.js'

/** The keys of this part's words in the catalogues. */
export type AccessKey = Extract<MessageKey, `access.${string}` | `lane.${string}`>

/** The page's words in its language, as ASCII HTML (i18n.ts Texts), handed in so that this part needs nothing of the page's module. */
type Words = { html(key: AccessKey): string }

/** States in which a visitor holds a place a code could improve. */
const FORM_STATES: ReadonlySet<string> = new Set(['queued', 'paused', 'recovering', 'prequeue', 'all_held'])

/**
 * The form, for a room that takes codes (its accessCodes setting) and a state with a place; '' otherwise.
 * The same for every visitor of a room in a state: it belongs to the page's frame.
 */
export function accessForm(v: Pick<VisitorStatus, 'state'>, room: { title: string; accessCodes?: string }, words: Words): string {
  if (room.accessCodes !== 'on' || !FORM_STATES.has(v.state)) return ''
  const html = (key: AccessKey) => words.html(key)
  return `
<form class="access" method="get" aria-labelledby="access-heading">
<h2 id="access-heading">${html('access.heading')}</h2>
<label for="access-code">${html('access.label')}</label>
<div class="access-row"><input id="access-code" name="code" type="text" required maxlength="64" autocomplete="off" autocapitalize="characters" spellcheck="false" aria-describedby="access-hint"><button type="submit">${html('access.button')}</button></div>
<p class="muted" id="access-hint">${html('access.hint')}</p>
</form>`
}

/** The line that tells a visitor their place is in a lane; '' for everyone else (the visitor's own part of the page). */
export function laneNote(v: { lane?: Lane }, words: Words): string {
  if (v.lane === undefined) return ''
  return `<p class="lane" id="lane">${words.html(v.lane === 'priority' ? 'lane.priority' : 'lane.separate')}</p>`
}

/** The part's style, in the page's style sheet (src/http/pages.ts QUEUE_ASSETS). */
export const ACCESS_STYLE =
  '.access{margin-top:1.25rem;padding-top:1rem;border-top:1px solid var(--line)}.access h2{font-size:1rem;margin:0 0 .5rem}' +
  '.access label{display:block;font-size:.9rem;color:var(--muted)}.access-row{display:flex;gap:.5rem;margin:.25rem 0}' +
  '.access input{flex:1;min-width:0;font:inherit;letter-spacing:.05em;padding:.45rem .6rem;border:1px solid var(--track);border-radius:.5rem;background:var(--bg);color:var(--ink)}' +
  '.access button{font:inherit;padding:.45rem .9rem;border:0;border-radius:.5rem;background:var(--accent);color:var(--card);cursor:pointer}' +
  '.lane{font-weight:600;color:var(--accent)}'
