// The Origin port: forwards one request to the configured origin and nowhere else.

export interface ForwardRequest {
  method: string
  /** Path and query only; the adapter prefixes the configured origin. */
  path: string
  headers: Headers
  body: ReadableStream<Uint8Array> | null
}

export interface Origin {
  /** Throws AnteroomError ERR_ORIGIN_TIMEOUT or ERR_ORIGIN_UNREACHABLE when the origin fails. */
  forward(request: ForwardRequest): Promise<Response>
  close(): Promise<void>
}
