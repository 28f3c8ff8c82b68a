// Origin over the Fetch API, for the Worker: forwards to the one configured origin, streaming both ways.
import { AnteroomError } from '../../core/errors.js'
import type { ForwardRequest, Origin, OriginResponse } from '../../ports/origin.js'

export interface FetchOriginOptions {
  /** Origin base URL, e.g. https://booking.example. Requests go here and nowhere else. */
  url: string
  /** How long to wait for response headers, ms. Once they came, the body streams without a time limit. */
  headersTimeout?: number
  /** The runtime's fetch (tests may hand in another). */
  fetch?: typeof fetch
}

/** Headers that fetch() sets itself and refuses or mangles when given. */
const FETCH_OWNED = new Set(['host', 'content-length', 'transfer-encoding', 'connection', 'expect'])

export class FetchOrigin implements Origin {
  private readonly base: URL
  private readonly basePath: string
  private readonly fetch: typeof fetch

  constructor(private readonly options: FetchOriginOptions) {
    this.base = new URL(options.url)
    this.basePath = this.base.pathname.replace(/\/+$/, '')
    this.fetch = options.fetch ?? ((input, init) => fetch(input, init))
  }

  async forward(request: ForwardRequest): Promise<OriginResponse> {
    // The path is joined to the configured origin as text; it never carries a scheme or host of its own.
    const target = `${this.base.origin}${this.basePath}${request.path}`
    const headers = new Headers()
    for (const [name, value] of Object.entries(request.headers)) if (!FETCH_OWNED.has(name)) headers.set(name, value)
    const abort = new AbortController()
    const timer = setTimeout(() => abort.abort(), this.options.headersTimeout ?? 30_000)
    request.signal?.addEventListener('abort', () => abort.abort(), { once: true })
    let res: Response
    try {
      res = await this.fetch(target, {
        method: request.method,
        headers,
        body: request.body,
        redirect: 'manual',
        signal: abort.signal,
        // Node's fetch needs this to stream a request body; workerd ignores it.
        ...(request.body === null ? {} : { duplex: 'half' }),
      } as RequestInit)
    } catch (cause) {
      if (abort.signal.aborted) throw new AnteroomError('ERR_ORIGIN_TIMEOUT', 'The origin did not answer in time', { cause })
      throw new AnteroomError('ERR_ORIGIN_UNREACHABLE', 'The origin could not be reached', { cause })
    } finally {
      clearTimeout(timer)
    }
    const out: OriginResponse['headers'] = {}
    res.headers.forEach((value, name) => {
      if (name !== 'set-cookie') out[name] = value
    })
    const cookies = res.headers.getSetCookie()
    if (cookies.length > 0) out['set-cookie'] = cookies
    // These carry no body, whatever the origin sent; a Response with one would throw.
    const bodyless = request.method === 'HEAD' || res.status === 204 || res.status === 304
    if (bodyless) await res.body?.cancel()
    return { status: res.status, headers: out, body: bodyless ? null : res.body }
  }

  async close(): Promise<void> {}
}
