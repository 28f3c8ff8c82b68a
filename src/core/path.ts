// The one canonical form of a request path: rooms are matched on it and the origin receives it, so
// no spelling of a path can mean one thing to the edge and another to the origin. The rule
// (docs/architecture.md, "Paths"):
//   1. Every %XX is decoded, once. What a decoding could make ambiguous is refused instead: an
//      encoded / \ or ;, NUL and other control characters (encoded or literal), a % that decodes to
//      another escape (double encoding, %252e, %25u002e), bytes that are not UTF-8 (overlong %c0%ae),
//      and look-alikes of / \ . that some servers map to ASCII (U+2215, U+FF0F, ...).
//   2. What origins read in different ways is refused too: literal backslashes, ;path parameters,
//      and segments that end in a dot or a space (Windows servers drop those).
//   3. Empty segments collapse (//), then . and .. are resolved (RFC 3986 §5.2.4).
//   4. The result is encoded again: unreserved characters and sub-delimiters literal, the rest as
//      %XX in upper case. Decoding it once more changes nothing, so the origin's normalisation, if
//      it has one, leads back to the same path.
// Matching uses the lower-case form, so /SHOP is inside a room on /shop (a room may protect more
// than a case-sensitive origin distinguishes, never less).

export type CanonicalPath = { ok: true; path: string; key: string } | { ok: false; problem: string }

const HEX = /^[0-9A-Fa-f]{2}$/
/** Characters a segment keeps literally: unreserved, sub-delims but ;, and : @. */
const LITERAL = /^[A-Za-z0-9\-._~!$&'()*+,=:@]$/
const SAFE_SEGMENT = /^[A-Za-z0-9\-._~!$&'()*+,=:@]*$/
const utf8 = new TextDecoder('utf-8', { fatal: true })
const encoder = new TextEncoder()

/** Slashes, backslashes and dots in other scripts, which some servers map to ASCII ("best fit"). */
const LOOKALIKE = /[\u2044\u2215\u2216\u29f5\u29f8\u29f9\ufe68\uff0e\uff0f\uff3c]/
const LOOKALIKE_PROBLEM = 'the path has a character that some servers read as / \\ or . (such as U+2215 or U+FF0F)'
const refuse = (problem: string): CanonicalPath => ({ ok: false, problem })

function isControl(code: number): boolean {
  return code < 0x20 || code === 0x7f
}

/** One segment's text, decoded, or the reason it cannot be. */
function decodeSegment(raw: string): string | { problem: string } {
  if (!raw.includes('%')) return LOOKALIKE.test(raw) ? { problem: LOOKALIKE_PROBLEM } : raw
  const bytes: number[] = []
  for (let i = 0; i < raw.length; i++) {
    const ch = raw.charCodeAt(i)
    if (ch !== 0x25) {
      if (ch < 0x80) bytes.push(ch)
      else for (const b of encoder.encode(raw[i] as string)) bytes.push(b)
      continue
    }
    const hex = raw.slice(i + 1, i + 3)
    if (!HEX.test(hex)) return { problem: 'a % in the path is not followed by two hex digits' }
    const b = Number.parseInt(hex, 16)
    if (b === 0x2f || b === 0x5c) return { problem: 'the path has an encoded / or \\ (%2F or %5C)' }
    // A decoded ; would be read as a path parameter by origins that split after decoding.
    if (b === 0x3b) return { problem: 'the path has an encoded ; (%3B), which origins read in different ways' }
    if (isControl(b)) return { problem: 'the path has an encoded NUL or control character' }
    bytes.push(b)
    i += 2
  }
  let text: string
  try {
    text = utf8.decode(new Uint8Array(bytes))
  } catch {
    return { problem: 'the path has escapes that are not valid UTF-8 (such as the overlong %C0%AE)' }
  }
  if (/%([0-9A-Fa-f]{2}|[uU][0-9A-Fa-f]{4})/.test(text)) return { problem: 'the path is encoded twice (such as %252e)' }
  if (LOOKALIKE.test(text)) return { problem: LOOKALIKE_PROBLEM }
  return text
}

function encodeSegment(text: string): string {
  if (SAFE_SEGMENT.test(text)) return text
  let out = ''
  for (const ch of text) {
    if (LITERAL.test(ch)) out += ch
    else for (const b of encoder.encode(ch)) out += `%${b.toString(16).toUpperCase().padStart(2, '0')}`
  }
  return out
}

/** The canonical path for a pathname (as in a URL: no query, no fragment). */
export function canonicalPath(pathname: string): CanonicalPath {
  if (!pathname.startsWith('/')) return refuse('the path must start with /')
  for (let i = 0; i < pathname.length; i++) {
    const ch = pathname.charCodeAt(i)
    if (isControl(ch)) return refuse('the path has a NUL or control character')
    if (ch === 0x5c) return refuse('the path has a backslash')
    if (ch === 0x3b) return refuse('the path has ;parameters, which origins read in different ways')
  }
  const raw = pathname.slice(1).split('/')
  const out: string[] = []
  for (const [i, part] of raw.entries()) {
    const last = i === raw.length - 1
    const segment = decodeSegment(part)
    if (typeof segment !== 'string') return refuse(segment.problem)
    if (segment === '' || segment === '.') {
      // A trailing "." or "" leaves a directory: /shop/. is /shop/.
      if (last) out.push('')
      continue
    }
    if (segment === '..') {
      out.pop()
      if (last) out.push('')
      continue
    }
    if (/[. ]$/.test(segment)) return refuse('a path segment ends in a dot or a space, which some servers drop')
    out.push(segment)
  }
  const path = `/${out.map(encodeSegment).join('/')}`
  return { ok: true, path, key: path.toLowerCase() }
}

/** The reserved prefix of the edge's own endpoints: never a room, never forwarded. */
export const RESERVED_PREFIX = '/_anteroom'

export function isReserved(key: string): boolean {
  return key === RESERVED_PREFIX || key.startsWith(`${RESERVED_PREFIX}/`)
}
