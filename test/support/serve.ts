// A fetch handler (a Hono app's fetch, or any `(req) => Response`) served by @hono/node-server on a
// loopback port, as `npm start` serves the apps: the one way the tests put an app on a real socket.
import type { Server } from 'node:http'
import { serve } from '@hono/node-server'

export type FetchHandler = (req: Request, env?: unknown) => Response | Promise<Response>

export interface Served {
  /** http://127.0.0.1:<port> */
  url: string
  port: number
  server: Server
  /** Drops every connection, idle or not, and waits for the server to close. */
  close(): Promise<void>
}

/**
 * Serves `fetch` on 127.0.0.1 and resolves once it listens. The port is a free one the system picks,
 * unless `port` names one (when another app must know the URL before this one starts).
 */
export async function serveOnFreePort(fetch: FetchHandler, o: { port?: number } = {}): Promise<Served> {
  const server = serve({ fetch, hostname: '127.0.0.1', port: o.port ?? 0 }) as Server
  await new Promise<void>((resolve, reject) => {
    if (server.listening) return resolve()
    server.once('listening', () => resolve())
    server.once('error', reject)
  })
  const { port } = server.address() as { port: number }
  let closed: Promise<void> | undefined
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    server,
    close: () => {
      closed ??= new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
      return closed
    },
  }
}
