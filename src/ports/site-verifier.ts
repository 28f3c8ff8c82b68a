// The SiteVerifier port: a human check's token sent to a Turnstile-compatible siteverify endpoint
// (POST form secret, response, remoteip, idempotency_key; JSON back), by src/adapters/fetch/
// siteverify.ts on both runtimes. What the endpoint said is judged by core/human-check.ts; a timeout
// and an endpoint that could not be reached or did not answer JSON are values, not errors.

export type SiteVerifyAnswer = { kind: 'answered'; body: unknown } | { kind: 'timeout' } | { kind: 'error'; reason: string }

export interface SiteVerifyInput {
  /** The token the visitor's widget produced. */
  response: string
  /** The visitor's address as the runtime gave it; left out when there is none. */
  remoteip: string | undefined
  /** Makes a retried call the same call at the provider. */
  idempotencyKey: string
}

export interface SiteVerifier {
  verify(input: SiteVerifyInput): Promise<SiteVerifyAnswer>
}
