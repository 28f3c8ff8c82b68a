// What the Worker receives from wrangler.toml ([vars], bindings) and from Worker secrets.
import type { StoreRelay } from './store-relay.js'

export interface WorkerEnv {
  /** Secrets (wrangler secret put). */
  ANTEROOM_QUEUE_SECRET?: string
  ANTEROOM_SIGNING_KEYS?: string
  ANTEROOM_ADMIN_TOKEN?: string
  ANTEROOM_ADMIN_TOKENS?: string
  ANTEROOM_REDIS_URL?: string
  /** Header bypass rules' secrets (name:secret,...) and the human check provider's secret. */
  ANTEROOM_BYPASS_SECRETS?: string
  ANTEROOM_HUMAN_CHECK_SECRET?: string
  /** Plain settings ([vars]). */
  ANTEROOM_ORIGIN?: string
  ANTEROOM_ROOMS?: string
  ANTEROOM_ISSUER?: string
  ANTEROOM_AUDIENCE?: string
  ANTEROOM_SECURE_COOKIES?: string
  ANTEROOM_HISTORY_SAMPLE_SECONDS?: string
  /** The human check's provider and where crawler checks ask DNS (DNS over HTTPS: a Worker has no DNS sockets). */
  ANTEROOM_HUMAN_CHECK_SITE_KEY?: string
  ANTEROOM_HUMAN_CHECK_URL?: string
  ANTEROOM_HUMAN_CHECK_SCRIPT_URL?: string
  ANTEROOM_DOH_URL?: string
  /** Origins a page template's own style sheet may come from (comma-separated). */
  ANTEROOM_TEMPLATE_STYLE_ORIGINS?: string
  /** How the Worker reaches Redis: "relay" (Durable Objects, the default) or "per-call". */
  ANTEROOM_WORKER_REDIS?: string
  /** Poll shards per room: how many StoreRelay objects share a room's polls. */
  ANTEROOM_RELAY_SHARDS?: string
  STORE_RELAY?: DurableObjectNamespace<StoreRelay>
}
