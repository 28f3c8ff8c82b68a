// The SiteVerifier port over fetch, on Node (undici's fetch) and on a Worker alike: a Turnstile-
// compatible siteverify call (POST form secret, response, remoteip, idempotency_key), with a timeout.
// At most MAX_IN_FLIGHT calls run at once: more answer `error` at once (the room's humanCheckOnError
// applies), so a flood of made-up tokens cannot pile up requests to the provider.
import type { SiteVerifier, SiteVerifyAnswer, SiteVerifyInput } from '../../ports/site-verifier.js'

export interface FetchSiteVerifierOptions {
  url: string
  secret: string
  timeoutMs: number
  maxInFlight?: number
  fetch?: typeof fetch
}

/** The largest siteverify answer read: Turnstile's are a few hundred bytes. */
const MAX_ANSWER_BYTES = 16_384

export function fetchSiteVerifier(options: FetchSiteVerifierOptions): SiteVerifier {
  const doFetch = options.fetch ?? ((input: RequestInfo | URL, init?: RequestInit) => fetch(input, init))
  const maxInFlight = options.maxInFlight ?? 256
  let inFlight = 0
  return {
    async verify(input: SiteVerifyInput): Promise<SiteVerifyAnswer> {
      if (inFlight >= maxInFlight) return { kind: 'error', reason: 'too many siteverify calls at once' }
      inFlight++
      try {
        const form = new URLSearchParams({ secret: options.secret, response: input.response, idempotency_key: input.idempotencyKey })
        if (input.remoteip !== undefined) form.set('remoteip', input.remoteip)
        const res = await doFetch(options.url, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
          body: form.toString(),
          signal: AbortSignal.timeout(options.timeoutMs),
        })
        const text = await res.text()
        if (!res.ok) return { kind: 'error', reason: `siteverify answered ${res.status}` }
        if (text.length > MAX_ANSWER_BYTES) return { kind: 'error', reason: 'siteverify answered too much' }
        try {
          return { kind: 'answered', body: JSON.parse(text) }
        } catch {
          return { kind: 'error', reason: 'siteverify did not answer JSON' }
        }
      } catch (err) {
        const name = (err as Error)?.name
        if (name === 'TimeoutError' || name === 'AbortError') return { kind: 'timeout' }
        return { kind: 'error', reason: 'siteverify could not be reached' }
      } finally {
        inFlight--
      }
    },
  }
}
