// Files the Worker cannot read from disk, bundled as text by wrangler.toml's [[rules]]: the admin UI.
// (The Lua scripts come from src/adapters/redis/lua/index.generated.ts, an ordinary module.) A new
// admin UI module (admin/ui/<name>.js) needs one import line here, and its name in `modules`.

import type { AdminAssets } from '../admin/routes.js'
// @ts-expect-error TS7016: bundled as text, as app.js
import access from '../admin/ui/access.js'
// @ts-expect-error TS7016: bundled as text by wrangler.toml's [[rules]]; TypeScript takes any .js for a module
import app from '../admin/ui/app.js'
// @ts-expect-error TS7016: bundled as text, as app.js
import bypass from '../admin/ui/bypass.js'
import html from '../admin/ui/index.html'
// @ts-expect-error TS7016: bundled as text, as app.js
import page from '../admin/ui/page.js'
// @ts-expect-error TS7016: bundled as text, as app.js
import report from '../admin/ui/report.js'
import css from '../admin/ui/style.css'

export const ADMIN_ASSETS: AdminAssets = {
  html,
  css,
  modules: { 'access.js': access, 'app.js': app, 'bypass.js': bypass, 'page.js': page, 'report.js': report },
}
