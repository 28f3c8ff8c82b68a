// The edge as a Worker, in workerd (Miniflare, the bundle wrangler builds for a deploy): the same HTTP
// behaviour suite as on Node, with Redis reached through StoreRelay Durable Objects.
import { inject } from 'vitest'
import { edgeHttpContract } from './contract/edge-http.js'
import { workerRuntime } from './support/runtimes.js'

edgeHttpContract(workerRuntime(() => inject('redisUrl')))
