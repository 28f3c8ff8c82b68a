// A Turnstile-compatible human check provider on loopback, for the tests and local runs (no network
// reaches Cloudflare here): the widget's script (/turnstile/v0/api.js: turnstile.render, reset, remove,
// getResponse) renders an iframe of this server's widget, which hands the page a token at once by
// postMessage, as Turnstile's iframe does; and siteverify (POST /siteverify, form secret, response,
// remoteip, idempotency_key) answers Turnstile's JSON. The test chooses whether the next widget's
// token passes (`outcome`), can mint tokens for JSON clients (`mint`), and can make siteverify fail
// (`siteverify: 'error'`: 500) or never answer ('hang'); closing the server makes it unreachable.
// Tokens are single-use, as Turnstile's: a second siteverify of one answers timeout-or-duplicate.
import { randomBytes } from 'node:crypto'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { Socket } from 'node:net'

export interface SiteVerifyCall {
  secret: string
  response: string
  remoteip: string | undefined
  idempotencyKey: string | undefined
}

export interface MintOptions {
  pass: boolean
  /** The host the widget ran on: siteverify says it back. */
  hostname: string
  action?: string
  cdata?: string
}

export interface HumanCheckProvider {
  /** http://127.0.0.1:port */
  url: string
  siteverifyUrl: string
  scriptUrl: string
  siteKey: string
  secret: string
  /** What the tokens the widget hands out from now on do at siteverify. */
  outcome: 'pass' | 'fail'
  /** How siteverify answers: as Turnstile does, with 500, or never. */
  siteverify: 'answer' | 'error' | 'hang'
  /** Every siteverify call, in order. */
  calls: SiteVerifyCall[]
  /** A token as the widget would hand one out, for a client that is not a browser. */
  mint(options: MintOptions): string
  close(): Promise<void>
}

interface Issued extends Required<MintOptions> {
  used: boolean
  at: number
}

function widgetScript(base: string): string {
  // The iframe's origin is this server's; a message from anywhere else is not a token.
  return `(function(){var base=${JSON.stringify(base)},widgets={},n=0;
window.addEventListener('message',function(e){if(e.origin!==base)return;var m=e.data||{};var w=widgets[m.widget];if(!w||m.source!=='anteroom-test-widget')return;
if(m.token){w.token=m.token;if(typeof w.p.callback==='function')w.p.callback(m.token)}else if(typeof w.p['error-callback']==='function')w.p['error-callback'](m.error||'error')});
function src(id,w){var p=w.p;return base+'/widget?widget='+id+'&sitekey='+encodeURIComponent(p.sitekey||'')+'&action='+encodeURIComponent(p.action||'')+'&cdata='+encodeURIComponent(p.cData||'')+'&hostname='+encodeURIComponent(location.hostname)+'&n='+(++n)}
window.turnstile={render:function(el,p){if(typeof el==='string')el=document.querySelector(el);var id='w'+(++n),w={p:p||{},token:null};
var f=document.createElement('iframe');f.title='Human check';f.width='300';f.height='65';f.setAttribute('frameborder','0');w.f=f;widgets[id]=w;f.src=src(id,w);el.appendChild(f);return id},
reset:function(id){var w=widgets[id];if(w){w.token=null;w.f.src=src(id,w)}},remove:function(id){var w=widgets[id];if(w){w.f.remove();delete widgets[id]}},
getResponse:function(id){var w=widgets[id];return w?w.token:undefined}};})();`
}

function widgetPage(message: Record<string, unknown>): string {
  // The parent is told the token with the page's own script (this server's page, under its own policy).
  return `<!doctype html><html><head><meta charset="utf-8"><title>Human check</title></head>
<body style="margin:0;font:14px sans-serif"><div id="box" style="border:1px solid #bbb;padding:20px 12px">&#10003; Verified (test provider)</div>
<script>parent.postMessage(${JSON.stringify({ source: 'anteroom-test-widget', ...message })},'*')</script></body></html>`
}

function readForm(req: IncomingMessage): Promise<URLSearchParams> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => resolve(new URLSearchParams(Buffer.concat(chunks).toString())))
  })
}

export async function startHumanCheckProvider(options: { siteKey?: string; secret?: string } = {}): Promise<HumanCheckProvider> {
  const issued = new Map<string, Issued>()
  const sockets = new Set<Socket>()
  const mint = (o: MintOptions): string => {
    const token = `XXXX.DUMMY.${randomBytes(24).toString('base64url')}`
    issued.set(token, { action: '', cdata: '', ...o, used: false, at: Date.now() })
    return token
  }
  const provider: HumanCheckProvider = {
    url: '',
    siteverifyUrl: '',
    scriptUrl: '',
    siteKey: options.siteKey ?? '1x00000000000000000000AA',
    secret: options.secret ?? `test-human-check-secret-${randomBytes(8).toString('hex')}`,
    outcome: 'pass',
    siteverify: 'answer',
    calls: [],
    mint,
    close: async () => {},
  }

  async function siteverify(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const form = await readForm(req)
    provider.calls.push({
      secret: form.get('secret') ?? '',
      response: form.get('response') ?? '',
      remoteip: form.get('remoteip') ?? undefined,
      idempotencyKey: form.get('idempotency_key') ?? undefined,
    })
    if (provider.siteverify === 'hang') return
    if (provider.siteverify === 'error') {
      res.statusCode = 500
      res.end('internal error')
      return
    }
    const answer = (body: Record<string, unknown>) => {
      res.setHeader('content-type', 'application/json')
      res.end(JSON.stringify({ 'error-codes': [], messages: [], ...body }))
    }
    if (form.get('secret') !== provider.secret) return answer({ success: false, 'error-codes': ['invalid-input-secret'] })
    const token = issued.get(form.get('response') ?? '')
    if (token === undefined) return answer({ success: false, 'error-codes': ['invalid-input-response'] })
    if (token.used) return answer({ success: false, 'error-codes': ['timeout-or-duplicate'] })
    token.used = true
    if (!token.pass) return answer({ success: false, 'error-codes': ['invalid-input-response'] })
    answer({
      success: true,
      challenge_ts: new Date(token.at).toISOString(),
      hostname: token.hostname,
      action: token.action,
      cdata: token.cdata,
      metadata: { interactive: false },
    })
  }

  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://provider')
    if (req.method === 'POST' && url.pathname === '/siteverify') {
      void siteverify(req, res)
      return
    }
    if (url.pathname === '/turnstile/v0/api.js') {
      res.setHeader('content-type', 'text/javascript; charset=utf-8')
      res.end(widgetScript(provider.url))
      return
    }
    if (url.pathname === '/widget') {
      const q = url.searchParams
      const widget = q.get('widget') ?? ''
      res.setHeader('content-type', 'text/html; charset=utf-8')
      res.setHeader('content-security-policy', "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'")
      if (q.get('sitekey') !== provider.siteKey) {
        res.end(widgetPage({ widget, error: '110100' }))
        return
      }
      const token = mint({
        pass: provider.outcome === 'pass',
        hostname: q.get('hostname') ?? '',
        action: q.get('action') ?? '',
        cdata: q.get('cdata') ?? '',
      })
      res.end(widgetPage({ widget, token }))
      return
    }
    res.statusCode = 404
    res.end('not found')
  })
  server.on('connection', (s: Socket) => {
    sockets.add(s)
    s.once('close', () => sockets.delete(s))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  provider.url = `http://127.0.0.1:${port}`
  provider.siteverifyUrl = `${provider.url}/siteverify`
  provider.scriptUrl = `${provider.url}/turnstile/v0/api.js`
  provider.close = () =>
    new Promise((resolve) => {
      for (const s of sockets) s.destroy()
      server.close(() => resolve())
    })
  return provider
}
