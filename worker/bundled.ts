// Files the Worker cannot read from disk, bundled as text by wrangler.toml's [[rules]]: the admin UI.
// (The Lua scripts come from src/adapters/redis/lua/index.generated.ts, an ordinary module.)

import type { AdminAssets } from '../admin/routes.js'
// @ts-expect-error TS7016: bundled as text by wrangler.toml's [[rules]]; TypeScript takes any .js for a module
import js from '../admin/ui/app.js'
import html from '../admin/ui/index.html'
// @ts-expect-error TS7016: bundled as text, as app.js
import reportJs from '../admin/ui/report.js'
import css from '../admin/ui/style.css'

export const ADMIN_ASSETS: AdminAssets = { html, js, css, reportJs }
