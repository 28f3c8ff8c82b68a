// Text for the visitor's HTML pages, kept one byte a character: a two-byte page had to be re-encoded
// per request, 15-20 µs a page in the edge.

/**
 * Text for HTML. Beyond the five markup characters, every printable character outside ASCII becomes
 * a character reference too, so that a page stays a one-byte string. (C1 controls stay as they are:
 * their references would read as Windows-1252.)
 */
export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']|[\u00a0-\u{10ffff}]/gu, (c) => `&#${c.codePointAt(0)};`)
}

/** A count with thousands separators, as toLocaleString('en') writes it ("1,234"), without its cost per call. */
export function grouped(n: number): string {
  if (!Number.isSafeInteger(n) || n < 0) return n.toLocaleString('en')
  const digits = String(n)
  if (n < 1000) return digits
  let out = digits.slice(0, digits.length % 3 || 3)
  for (let i = out.length; i < digits.length; i += 3) out += `,${digits.slice(i, i + 3)}`
  return out
}

/**
 * The same text as one flat string. V8 keeps a text made with + or a template as a tree of its pieces,
 * walked again whenever it is copied, and a page's frame is copied into every page. A JSON round trip
 * makes a new, flat string (join and slice may hand back the tree itself); the text is ASCII.
 */
export function flat(tree: string): string {
  return JSON.parse(JSON.stringify(tree)) as string
}
