// The one place where a Redis failure becomes ERR_STORE_UNAVAILABLE. Every store call on Redis runs
// through storeCall, so a refused connection, a timeout, a script error and a discarded transaction
// all reach the apps as the same code, and the room's onStoreError (or the admin's 503) applies.
import { AnteroomError } from '../../core/errors.js'

export async function storeCall<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run()
  } catch (cause) {
    if (cause instanceof AnteroomError) throw cause
    throw new AnteroomError('ERR_STORE_UNAVAILABLE', 'Redis did not answer', { cause })
  }
}

/** The values of a MULTI's or a pipeline's replies; throws (for storeCall) if it was discarded or a command failed. */
export function replies(results: [Error | null, unknown][] | null): unknown[] {
  if (results === null) throw new Error('the transaction was discarded')
  for (const [err] of results) if (err) throw err
  return results.map(([, value]) => value)
}
