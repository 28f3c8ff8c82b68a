// The admin UI and signing in (routes.ts mounts these first): the page, its style and ES modules, sign-in
// and sign-out, and the API's description need no credentials; then the check every other /api route
// passes: a bearer token, or the UI's session cookie plus its CSRF header on changes. Failed sign-ins and
// wrong bearer tokens are throttled per client address and account (throttle.ts), and logged.
import type { Context } from 'hono'
import { readBody } from '../../src/core/body-schema.js'
import { safeEqual } from '../../src/core/compare.js'
import { AnteroomError, isAnteroomError } from '../../src/core/errors.js'
import { edgeApiDocument } from '../../src/http/api-description.js'
import { readCookie, serializeCookie } from '../../src/http/cookies.js'
import { ADMIN_COOKIE } from '../auth.js'
import { ADMIN_MODULE, SIGN_IN_BODY } from '../inputs.js'
import { accountKey, addressKey, describeWait, SignInThrottle } from '../throttle.js'
import { type AdminApp, type AdminContext, NO_STORE, readJson } from './common.js'

export function signInRoutes(app: AdminApp, ctx: AdminContext): void {
  const { deps, now, log, requestId } = ctx
  const throttle = new SignInThrottle(deps.auth.sessions)
  const address = (c: Context) => deps.clientIp?.(c) ?? 'unknown'

  /** 429 while a client address or account is locked; `lead` says why, when this attempt was checked. */
  function tooMany(lockedMs: number, lead = ''): AnteroomError {
    const seconds = Math.max(1, Math.ceil(lockedMs / 1000))
    return new AnteroomError('ERR_TOO_MANY_ATTEMPTS', `${lead}Too many failed sign-ins: try again in ${describeWait(lockedMs)}.`, {
      retryAfterSeconds: seconds,
      extra: { retryAfterSeconds: seconds },
    })
  }

  /** Counts a failed credential check and logs it (the address, the account named, the counts; never the token). */
  async function failed(c: Context, via: 'login' | 'bearer', keys: string[], account: string | undefined) {
    const fields = { via, client: address(c), account, requestId: requestId(c) }
    let result: Awaited<ReturnType<SignInThrottle['fail']>>
    try {
      result = await throttle.fail(keys, now())
    } catch (err) {
      log('admin_signin_failed', { ...fields, failures: undefined, error: 'the store did not count it' })
      throw err
    }
    log('admin_signin_failed', {
      ...fields,
      failures: result.counts[0],
      accountFailures: account === undefined ? undefined : result.counts[1],
      lockedSeconds: result.lockedMs > 0 ? Math.ceil(result.lockedMs / 1000) : undefined,
    })
    return result
  }
  const uiHeaders = {
    'content-security-policy':
      "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; frame-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'cache-control': NO_STORE,
  }

  // --- UI and sign-in: no credentials needed to load the page and sign in ---------------------
  app.get('/admin', (c) => c.html(deps.assets.html, 200, uiHeaders))
  app.get('/admin/style.css', (c) => c.body(deps.assets.css, 200, { ...uiHeaders, 'content-type': 'text/css; charset=utf-8' }))
  // Each ES module of the UI (AdminAssets.modules), after the fixed files above.
  app.get('/admin/:module', (c) => {
    const name = c.req.param('module')
    const text = ADMIN_MODULE.test(name) && Object.hasOwn(deps.assets.modules, name) ? deps.assets.modules[name] : undefined
    if (text === undefined) throw new AnteroomError('ERR_NOT_FOUND', 'No such admin UI file')
    return c.body(text, 200, { ...uiHeaders, 'content-type': 'text/javascript; charset=utf-8' })
  })

  app.get('/admin/', (c) => c.redirect('/_anteroom/admin'))

  app.post('/admin/login', async (c) => {
    // JSON only: a plain form on another site cannot post here (and sign a browser in as someone else).
    if (!(c.req.header('content-type') ?? '').startsWith('application/json')) {
      throw new AnteroomError('ERR_UNSUPPORTED_MEDIA_TYPE', 'Sign in with a JSON body {"token": "..."}')
    }
    const body = readBody<{ name?: string | null; token?: unknown }>(SIGN_IN_BODY, await readJson(c), 'ERR_BAD_REQUEST')
    // A name of null or '' names no account (SIGN_IN_BODY).
    const name = body.name || undefined
    // Counted against the address, and against the account when one is named. Without a name only
    // the address counts: locking an account's name out does not lock its owner out.
    const keys = [addressKey(address(c)), ...(name === undefined ? [] : [accountKey(name)])]
    const state = await throttle.check(keys, now())
    if (state.lockedMs > 0) throw tooMany(state.lockedMs)
    let who = deps.auth.byToken(typeof body.token === 'string' ? body.token : undefined)
    if (name !== undefined && who !== name) who = undefined
    if (who === undefined) {
      const result = await failed(c, 'login', keys, name)
      const invalid = name === undefined ? 'That admin token is not valid' : 'That name and admin token do not match'
      if (result.lockedMs > 0) throw tooMany(result.lockedMs, `${invalid}. `)
      throw new AnteroomError('ERR_UNAUTHORIZED', invalid)
    }
    await throttle.clear([addressKey(address(c)), accountKey(who)])
    const session = await deps.auth.newSession(who, now())
    const cookie = serializeCookie(ADMIN_COOKIE, session, { maxAgeSeconds: 8 * 3600, secure: deps.secure?.(c) ?? false })
    c.header('set-cookie', cookie.replace('SameSite=Lax', 'SameSite=Strict').replace('Path=/', 'Path=/_anteroom'))
    return c.json({ who, csrf: await deps.auth.csrfFor(session) })
  })

  // Sign-out comes before the credential check below, so that it works (on this browser at least)
  // when the store cannot say whether the session was already ended.
  app.post('/api/logout', async (c) => {
    const session = readCookie(c.req.header('cookie') ?? null, ADMIN_COOKIE)
    if (session !== undefined) {
      const csrf = c.req.header('x-csrf-token')
      if (csrf === undefined || !safeEqual(csrf, await deps.auth.csrfFor(session))) {
        throw new AnteroomError('ERR_CSRF', 'Signing out from the admin UI needs its X-CSRF-Token header')
      }
    }
    // The cookie goes whatever happens next; the session is refused by every edge from now on.
    c.header('set-cookie', `${ADMIN_COOKIE}=; Path=/_anteroom; Max-Age=0; HttpOnly; SameSite=Strict`)
    try {
      await deps.auth.endSession(session, now())
    } catch (err) {
      if (!isAnteroomError(err, 'ERR_STORE_UNAVAILABLE')) throw err
      throw new AnteroomError(
        'ERR_STORE_UNAVAILABLE',
        'Signed out in this browser only: the store did not answer, so the session could not be ended everywhere',
        { expose: true, cause: err },
      )
    }
    return c.json({ ok: true })
  })

  // The API's description (OpenAPI 3.1): public, like the source it is generated from.
  app.get('/api/openapi.json', (c) => c.json(edgeApiDocument(), 200, { 'cache-control': NO_STORE }))

  // --- Everything else needs a bearer token, or a session cookie plus CSRF on changes ----------
  app.use('/api/*', async (c, next) => {
    const bearer = /^Bearer (.+)$/.exec(c.req.header('authorization') ?? '')?.[1]
    let who: string | undefined
    if (bearer !== undefined) {
      // A bearer token is a sign-in attempt: refused unchecked while the address is locked.
      const keys = [addressKey(address(c))]
      const state = await throttle.check(keys, now())
      if (state.lockedMs > 0) throw tooMany(state.lockedMs)
      who = deps.auth.byToken(bearer)
      if (who === undefined) {
        const result = await failed(c, 'bearer', keys, undefined)
        if (result.lockedMs > 0) throw tooMany(result.lockedMs, 'That admin token is not valid. ')
      } else if (state.anyFailures) {
        await throttle.clear([...keys, accountKey(who)])
      }
    }
    let viaCookie = false
    if (who === undefined) {
      const session = readCookie(c.req.header('cookie') ?? null, ADMIN_COOKIE)
      who = await deps.auth.bySession(session, now())
      viaCookie = who !== undefined
      if (viaCookie && c.req.method !== 'GET' && c.req.method !== 'HEAD') {
        const csrf = c.req.header('x-csrf-token')
        if (csrf === undefined || !safeEqual(csrf, await deps.auth.csrfFor(session as string))) {
          throw new AnteroomError('ERR_CSRF', 'A change from the admin UI needs its X-CSRF-Token header')
        }
      }
    }
    if (who === undefined) {
      c.header('www-authenticate', 'Bearer realm="anteroom-admin"')
      throw new AnteroomError('ERR_UNAUTHORIZED', 'Admin credentials are required')
    }
    c.set('who', who)
    c.set('viaCookie', viaCookie)
    c.header('cache-control', NO_STORE)
    await next()
  })

  app.get('/api/session', async (c) => {
    const session = readCookie(c.req.header('cookie') ?? null, ADMIN_COOKIE)
    return c.json({ who: c.get('who'), csrf: c.get('viaCookie') && session ? await deps.auth.csrfFor(session) : null })
  })
}
