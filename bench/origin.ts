// The origin behind the proxies of measurement 2: plain node:http, a short text body, keep-alive.
// Port from BENCH_PORT. Kept as cheap as possible, since it shares the two cores with everything else.
import { createServer } from 'node:http'

const BODY = Buffer.from('Hello from the origin\n')

const server = createServer((req, res) => {
  // Drain any request body so the connection stays reusable.
  req.resume()
  res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'content-length': BODY.length })
  res.end(BODY)
})
server.keepAliveTimeout = 60_000
server.listen(Number(process.env.BENCH_PORT), '127.0.0.1')
process.once('SIGTERM', () => {
  server.closeAllConnections()
  server.close()
  process.exit(0)
})
