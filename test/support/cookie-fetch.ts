// fetch with a cookie jar, as a browser keeps one: for tests that drive a real edge over HTTP.

/**
 * A fetch of paths under `base` that sends back the cookies it was given (and forgets the ones set to
 * expire); `onCookie` hears every value set, for tests that search logs for them.
 */
export function cookieFetch(base: string | (() => string), onCookie?: (value: string) => void) {
  const jar = new Map<string, string>()
  return async (path: string, init: RequestInit = {}): Promise<Response> => {
    const headers = new Headers(init.headers)
    if (jar.size > 0 && !headers.has('cookie')) headers.set('cookie', [...jar].map(([k, v]) => `${k}=${v}`).join('; '))
    const res = await fetch(`${typeof base === 'string' ? base : base()}${path}`, { ...init, headers })
    for (const line of res.headers.getSetCookie()) {
      const [pair = ''] = line.split(';')
      const eq = pair.indexOf('=')
      const value = pair.slice(eq + 1)
      onCookie?.(value)
      if (/Max-Age=0/.test(line)) jar.delete(pair.slice(0, eq))
      else jar.set(pair.slice(0, eq), value)
    }
    return res
  }
}
