// Poll until a condition holds, bounded: the one way the tests and tools wait for another process
// (a server starting, a failover done, a scrape landing). Never a way to time the product.

/**
 * Asks `check` every `everyMs` until it holds; a check that throws counts as "not yet" (a node or server
 * that is starting, failing over or gone). Throws after `ms`, naming `what` (a function is asked for its
 * text only then, so it can tell the last value seen).
 */
export async function until(what: string | (() => string), check: () => Promise<boolean>, ms = 20_000, everyMs = 25): Promise<void> {
  const deadline = Date.now() + ms
  for (;;) {
    try {
      if (await check()) return
    } catch {
      // not yet
    }
    if (Date.now() > deadline) throw new Error(`${typeof what === 'string' ? what : what()}: not reached within ${ms} ms`)
    await new Promise((r) => setTimeout(r, everyMs))
  }
}
