// Entries kept as JSON with a revision, {"rev": n, ...}, and written by a compare-and-set script: the
// settings store's rooms (settings-store.ts) and the template store's templates (template-store.ts).

/**
 * An entry as `read` makes it of the stored object, once its revision is a number; undefined when the
 * entry is damaged (not JSON, no revision, or `read` refuses or throws): a damaged entry must not
 * take the others down, the rest keep working.
 */
export function readVersioned<T>(json: string, read: (stored: { rev: number; [field: string]: unknown }) => T | undefined): T | undefined {
  try {
    const stored = JSON.parse(json) as { rev?: unknown }
    if (typeof stored.rev !== 'number') return undefined
    return read(stored as { rev: number })
  } catch {
    return undefined
  }
}

/**
 * What a compare-and-set script's reply says: [1, the new revision] when it wrote, else [0, the entry
 * there now, '' for none].
 */
export function casResult<T>(
  reply: [number, number | string],
  decode: (json: string) => T | undefined,
): { ok: true; rev: number } | { ok: false; current: T | undefined } {
  if (reply[0] === 1) return { ok: true, rev: Number(reply[1]) }
  return { ok: false, current: reply[1] === '' ? undefined : decode(String(reply[1])) }
}
