// The Origin port: forwards one request to the configured origin and nowhere else.

export interface ForwardRequest {
  method: string
  /** Path and query only; the adapter prefixes the configured origin. */
  path: string
  /** Lower-case names, already filtered for the origin. */
  headers: Record<string, string>
  body: ReadableStream<Uint8Array> | null
  /** Aborts the request (the edge cut the body off at its limit). */
  signal?: AbortSignal
}

export interface OriginResponse {
  status: number
  /** Lower-case names; Set-Cookie may be a list. */
  headers: Record<string, string | string[] | undefined>
  body: ReadableStream<Uint8Array> | null
}

export interface Origin {
  /** Throws AnteroomError ERR_ORIGIN_TIMEOUT or ERR_ORIGIN_UNREACHABLE when the origin fails. */
  forward(request: ForwardRequest): Promise<OriginResponse>
  close(): Promise<void>
}
