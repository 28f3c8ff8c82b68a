// Request bodies on their way to the origin: streamed, never buffered, and never more than the limit.
// A declared Content-Length over the limit is refused before a byte is read; a chunked body is
// counted as it streams and cut off at the limit, which the proxy then answers with 413.

export interface LimitedBody {
  /** What to send to the origin; null for GET, HEAD and requests without a body. */
  stream: ReadableStream<Uint8Array> | null
  /** The declared length is over the limit: answer 413 without reading. */
  tooLarge: boolean
  /** Whether the stream was cut off at the limit (the origin request then failed because of it). */
  overflowed(): boolean
  /**
   * Aborted when the body passes the limit. The origin request must take it: an erroring stream
   * alone ends workerd's outgoing body as if it were complete.
   */
  signal?: AbortSignal
}

const NONE: LimitedBody = { stream: null, tooLarge: false, overflowed: () => false }

export function limitedBody(request: Request, limit: number): LimitedBody {
  if (request.method === 'GET' || request.method === 'HEAD' || request.body === null) return NONE
  const declared = request.headers.get('content-length')
  if (declared !== null) {
    // The HTTP server holds the client to its Content-Length, so the stream needs no count.
    const tooLarge = !/^\d+$/.test(declared) || Number(declared) > limit
    return { stream: tooLarge ? null : request.body, tooLarge, overflowed: () => false }
  }
  let total = 0
  let overflowed = false
  const abort = new AbortController()
  const reader = request.body.getReader()
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { value, done } = await reader.read()
      if (done) return controller.close()
      total += value.byteLength
      if (total > limit) {
        overflowed = true
        abort.abort()
        controller.error(new Error('request body over the limit'))
        await reader.cancel().catch(() => {})
        return
      }
      controller.enqueue(value)
    },
    cancel(reason) {
      return reader.cancel(reason)
    },
  })
  return { stream, tooLarge: false, overflowed: () => overflowed, signal: abort.signal }
}
