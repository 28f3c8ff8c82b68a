// The Worker's entry (wrangler.toml `main`): the edge, and the Durable Object class it binds.
import { createWorker } from './edge.js'

export { StoreRelay } from './store-relay.js'

export default createWorker()
